"""Configs and secrets as Python meets them (issue 52): a secret that is
found inside the host's own removal marker, config errors that would print a
password, a spec with a NUL in it, and a config written to walk around the
pre-scan. What could hang or kill the interpreter runs in a child
interpreter under a timeout, so that it fails its test rather than the
suite.
"""
import os
import subprocess
import sys
import textwrap

import pytest

import kvblob

MARKER = "<secret removed by the host>"


def run_child(code, timeout=60):
    """Runs code in a fresh interpreter with this one's kvblob; returns it done."""
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {timeout} s")


def test_a_password_inside_the_hosts_marker_is_removed_and_open_answers():
    # The connect error names localhost; "host" is in it and in the marker.
    child = run_child("""
        import kvblob
        try:
            kvblob.load("redis").open({"url": "redis://localhost:1", "password": "host"})
        except kvblob.LoadError as e:
            print("refused:", e)
    """)
    assert child.returncode == 0, child.stderr
    assert "refused:" in child.stdout and "local" + MARKER in child.stdout


def write_config(tmp_path, options):
    config = tmp_path / "engine.toml"
    config.write_text('[driver]\nname = "memory"\n[driver.options]\nstore = "pytest-secrets"\n' + options)
    return str(config)


@pytest.mark.parametrize(
    "line, secret",
    [
        # An option the driver refuses, by a name that says it is secret.
        ('password = "hunter2-in-toml"\n', "hunter2-in-toml"),
        # A URL with a password in its userinfo, under a name that does not.
        ('url = "redis://app:hunter2-in-url@localhost:1"\n', "hunter2-in-url"),
        # Percent-encoded in the URL: neither form is printed.
        ('url = "redis://app:p%40ss-word@localhost:1"\n', "p@ss-word"),
    ],
)
def test_a_config_error_prints_no_secret(tmp_path, line, secret):
    plugin = kvblob.load(write_config(tmp_path, line))
    with pytest.raises(kvblob.ConfigError) as refused:
        plugin.open()
    said = str(refused.value)
    name = line.split(" =")[0]
    assert f"option '{name}' = <redacted> refused by driver memory" in said, said
    assert refused.value.line == 5
    for form in {secret, secret.replace("@", "%40")}:
        assert form not in said, said


def test_a_spec_with_a_nul_is_refused_not_cut_short(tmp_path):
    real = tmp_path / "real.toml"
    real.write_text('[driver]\nname = "memory"\n')
    assert kvblob.load(str(real)).name == "memory"  # the path before the NUL loads
    for spec in (str(real) + "\0.toml", "memory\0.toml", "memory\0"):
        with pytest.raises(ValueError, match="NUL"):
            kvblob.load(spec)


def test_a_triple_quoted_string_does_not_hide_a_deep_key_from_the_prescan(tmp_path):
    # """q"""" is the string q": the pre-scan once ended it at the first three
    # quotes, read the fourth as a string to the end of the line, and let a
    # key of 120,000 parts reach the parser, which overflowed its stack.
    config = tmp_path / "deep.toml"
    key = ".".join(["a"] * 120000)
    config.write_text('[driver]\nname = "memory"\n[driver.options]\nx = { b = """q"""", ' + key + " = 1 }\n")
    child = run_child(f"""
        import kvblob
        try:
            kvblob.load({str(config)!r})
        except kvblob.ConfigError as e:
            print("refused:", e.line, e)
    """)
    assert child.returncode == 0, f"exit {child.returncode}: {child.stderr[-2000:]}"
    assert "refused: 4 " in child.stdout and "dotted parts" in child.stdout, child.stdout
