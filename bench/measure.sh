# Sourced by the bench scripts: measure CMD... runs CMD $RUNS times (its stdout in $DIR/out) and
# prints "median_seconds max_rss_kb".
measure() {
  local times="" rss=""
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M" -o "$DIR/time" "$@" >"$DIR/out" || true
    times+="$(tail -1 "$DIR/time" | cut -d' ' -f1)"$'\n'
    rss+="$(tail -1 "$DIR/time" | cut -d' ' -f2)"$'\n'
  done
  echo "$(printf '%s' "$times" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" \
       "$(printf '%s' "$rss" | sort -n | tail -1)"
}
