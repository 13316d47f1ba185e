# shellcheck shell=bash
# Sourced by the scripts that start a server for a test (tests/redis/with_redis.sh,
# tests/mooncake/with_mooncake.sh): which ports to try, and whether the
# listener on a port is the server just started.
#
# A free port is not reserved: between the check and the server's bind,
# another process (a store client in a test beside this one) may take it,
# and the new server then exits while the port still accepts. So a server
# is ready only when the socket listening on its port is its own.

# A port to try: from 20000 (above the ranges a Mooncake client picks its
# own ports in, 12300-17000) to below the kernel's ephemeral range (where
# the outgoing connections and port-0 listeners of every other process
# land), so that only servers started on purpose compete for it. Leaves
# room for SPAN ports from the one returned (a server's second and third).
# (Where the ephemeral range starts below 21000 + SPAN, ports are tried
# from 20000 to 30000, inside it: the readiness check still tells.)
port_to_try() {
  local span=${1:-1} low=32768
  read -r low _ 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range || true
  [ "$low" -gt $((20000 + span + 1000)) ] || low=$((30000 + span))
  echo $((20000 + RANDOM % (low - 20000 - span)))
}

# True when process PID holds the socket listening on TCP PORT (IPv4 or IPv6).
listens_on() {
  local pid=$1 port=$2 hex inodes inode fds
  hex=$(printf '%04X' "$port")
  # /proc/net/tcp{,6}: "sl local_address rem_address st ... inode"; st 0A is LISTEN.
  inodes=$(awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  [ -n "$inodes" ] || return 1
  # Read whole, not piped to grep -q, whose early exit would fail ls under
  # pipefail where the process holds many descriptors.
  fds=$(ls -l "/proc/$pid/fd" 2>/dev/null) || return 1
  for inode in $inodes; do
    [[ $fds == *"socket:[$inode]"* ]] && return 0
  done
  return 1
}
