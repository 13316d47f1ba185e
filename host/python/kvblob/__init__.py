"""kvblob for Python engines: load a KV-cache store's driver and move blocks.

    import kvblob, numpy as np
    plugin = kvblob.load("memory")          # a name, a path, or a config.toml
    with plugin.open({"capacity": "1G"}) as driver:
        blocks = np.zeros((8, 65536), dtype=np.uint8)
        region = driver.register(blocks)
        keys = kvblob.block_keys("engine-a", tokens, 16)
        op = driver.put([(k, region, i * 65536, 65536) for i, k in enumerate(keys)])
        op.wait()
        print([r.status for r in op.results()])

Every call into a driver releases the GIL. Memory registered from Python
stays alive while any operation may touch it; refusals raise kvblob.Error
subclasses naming the rule (CallError.rule, LoadError.stage and .file).
"""
from ._kvblob import (  # noqa: F401
    Access,
    CallError,
    ConfigError,
    Driver,
    Error,
    LoadError,
    Operation,
    Plugin,
    Region,
    RowResult,
    RowStatus,
    __version__,
    block_keys,
    load,
    resume_bound,
)

__all__ = [
    "Access", "CallError", "ConfigError", "Driver", "Error", "LoadError", "Operation", "Plugin", "Region",
    "RowResult", "RowStatus", "block_keys", "load", "resume_bound",
]
