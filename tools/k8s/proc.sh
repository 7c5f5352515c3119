# Process identity for up.sh and down.sh (sourced): a pid names the same process only while its
# start time (/proc/PID/stat field 22, clock ticks since boot) is the one recorded, since pids are
# reused (after a reboot, or a long time). A zombie is not alive.

start_time() {  # pid -> start time, or nothing
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  # Fields after "(comm)" (comm may hold spaces): state is the 1st of them, starttime the 20th.
  echo "${stat##*) }" | awk '{print $20}'
}

same_process() {  # pid start -> true while that process runs and is not a zombie
  local stat
  [ -n "$1" ] && [ -n "$2" ] || return 1
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  set -- "$1" "$2" ${stat##*) }
  [ "$3" != Z ] && [ "${22}" = "$2" ]
}
