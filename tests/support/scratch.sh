# shellcheck shell=sh
# Sourced by the test scripts that give a stack of drivers a fresh folder
# for its file tier (tests/plugins/tiered_battery.sh): where that folder goes.
#
# Measured on the machines this suite runs on (ext4 without a journal):
# creating a file there scans past every inode deleted in the last 5 to 35
# seconds (ext4's recently_deleted), so a battery that puts and removes
# thousands of objects spent about half its CPU in that scan (perf: 44% of
# the file driver's battery in find_inode_bit). tmpfs allocates inodes
# without it. The file driver's own batteries stay on the disk, which is
# their subject (tests/conformance/store_left.sh); a stack above the file
# driver tests the stack, and gets tmpfs where it has room.

# The folder to make a test's scratch folder in: KVBLOB_TEST_SCRATCH where
# set, else /dev/shm where it is a writable tmpfs with at least 8 GiB free
# (a tiered battery holds up to 1.2 GiB in its file tier at once, and the
# plain suite runs up to three of them side by side), else TMPDIR (/tmp).
scratch_parent() {
  if [ -n "${KVBLOB_TEST_SCRATCH:-}" ]; then
    echo "$KVBLOB_TEST_SCRATCH"
    return
  fi
  if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ]; then
    free_kib=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
    if [ "${free_kib:-0}" -ge $((8 * 1024 * 1024)) ]; then
      echo /dev/shm
      return
    fi
  fi
  echo "${TMPDIR:-/tmp}"
}
