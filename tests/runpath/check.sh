#!/bin/sh
# No kvblob binary or plugin may make the dynamic linker search the current
# directory: every RUNPATH/RPATH entry of every ELF executable and shared
# object under the given folders is absolute or $ORIGIN-relative, and none is
# empty (an empty entry, as in "a::b" or a trailing ':', means the current
# directory).
# Usage: check.sh FOLDER...   Prints one line per bad entry; exit 1 if any.
set -u
bad=0 checked=0
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for root in "$@"; do
  # CMakeFiles holds compiler probes and objects, not what is built or shipped.
  # Other tests write and delete files under a build folder while this
  # runs: a file gone (or not yet whole) by the time it is read is skipped.
  for f in $(find "$root" -name CMakeFiles -prune -o -type f -print 2>/dev/null | sort); do
    [ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] || continue
    type=$(readelf -h "$f" 2>/dev/null | sed -n 's/^ *Type: *\([A-Z]*\).*/\1/p')
    case "$type" in EXEC|DYN) ;; *) continue ;; esac
    checked=$((checked + 1))
    readelf -d "$f" 2>/dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\1 \2/p' > "$list"
    while read -r kind value; do
      # Split on ':' keeping empty fields: a leading, trailing or doubled ':'.
      rest="$value:"
      while [ -n "$rest" ]; do
        entry=${rest%%:*}
        rest=${rest#*:}
        case "$entry" in
          /*|'$ORIGIN'|'$ORIGIN'/*|'${ORIGIN}'|'${ORIGIN}'/*) ;;
          '') echo "$f: $kind [$value] has an empty entry: the current directory"; bad=1; break ;;
          *) echo "$f: $kind [$value] has the relative entry '$entry': resolved from the current directory"; bad=1; break ;;
        esac
      done
    done < "$list"
  done
done
[ "$checked" -gt 0 ] || { echo "no ELF executable or shared object under $*"; exit 1; }
[ "$bad" -eq 0 ] || exit 1
echo "runpath ok: $checked ELF files, none searches the current directory"
