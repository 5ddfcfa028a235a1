#!/bin/sh
# Node counters for the node exporter's textfile collector (the EFA exporter DaemonSet on EKS).
#
# EFA: every file in /sys/class/infiniband/<device>/ports/<port>/hw_counters becomes
# node_amazonefa_<file>{device,port}, the names and labels of the amazonefa collector that the
# HyperPod EFA exporter runs, so one dashboard and one rule set serve EKS and HyperPod.
# Lustre client (FSx for Lustre mounts): llite stats (debugfs on the 2.15 client, which needs
# uid 0 to enter; procfs on older clients): bytes read and written, and operation counts and
# their summed latency, per file system.
#
# POSIX sh (busybox in the exporter image). Environment: SYSFS (default /sys), PROCFS
# (default /proc), OUT (directory the textfile collector reads), INTERVAL (seconds between
# samples; 0 writes once and exits, for tests).
set -eu

SYSFS="${SYSFS:-/sys}"
PROCFS="${PROCFS:-/proc}"
OUT="${OUT:-/run/fm-metrics}"
INTERVAL="${INTERVAL:-15}"

efa_counters() {
  for counters in "$SYSFS"/class/infiniband/*/ports/*/hw_counters; do
    [ -d "$counters" ] || continue
    port_dir="${counters%/hw_counters}"
    port="${port_dir##*/}"
    device_dir="${port_dir%/ports/*}"
    device="${device_dir##*/}"
    for file in "$counters"/*; do
      [ -f "$file" ] || continue
      name="${file##*/}"
      case "$name" in
        *[!a-z0-9_]*) continue ;;
      esac
      value="$(cat "$file" 2>/dev/null || true)"
      case "$value" in
        '' | *[!0-9]*) continue ;;
      esac
      kind=counter
      [ "$name" = lifespan ] && kind=gauge
      printf '# HELP node_amazonefa_%s EFA device counter %s (hw_counters).\n' "$name" "$name" >>"$1.types"
      printf '# TYPE node_amazonefa_%s %s\n' "$name" "$kind" >>"$1.types"
      printf 'node_amazonefa_%s{device="%s",port="%s"} %s\n' "$name" "$device" "$port" "$value"
    done
  done
}

lustre_client() {
  for stats in "$PROCFS"/fs/lustre/llite/*/stats "$SYSFS"/kernel/debug/lustre/llite/*/stats; do
    [ -f "$stats" ] || continue
    instance="${stats%/stats}"
    instance="${instance##*/}"
    fs="${instance%-*}"
    awk -v fs="$fs" '
      $3 != "samples" { next }
      $1 == "read_bytes" || $1 == "write_bytes" {
        printf "fm_lustre_client_%s_total{fs=\"%s\"} %s\n", $1, fs, $7
        next
      }
      $1 ~ /^(open|close|getattr|setattr|statfs|unlink|mkdir|rename|fsync|seek|mmap)$/ {
        printf "fm_lustre_client_operations_total{fs=\"%s\",operation=\"%s\"} %s\n", fs, $1, $2
        if ($4 == "[usecs]" && $7 != "") {
          printf "fm_lustre_client_operation_seconds_total{fs=\"%s\",operation=\"%s\"} %.6f\n", fs, $1, $7 / 1000000
        }
      }
    ' "$stats"
  done
}

# HELP/TYPE of one Lustre family, when the body has samples of it.
lustre_family() {
  if grep -q "^fm_lustre_client_$1{" "$tmp.body"; then
    printf '# HELP fm_lustre_client_%s %s\n# TYPE fm_lustre_client_%s counter\n' "$1" "$2" "$1"
  fi
}

write_once() {
  tmp="$OUT/.node_counters.prom.$$"
  : >"$tmp.types"
  efa_counters "$tmp" >"$tmp.body"
  lustre_client >>"$tmp.body"
  {
    LC_ALL=C sort -u "$tmp.types"
    lustre_family read_bytes_total "Bytes read by the Lustre client."
    lustre_family write_bytes_total "Bytes written by the Lustre client."
    lustre_family operations_total "Lustre client operations."
    lustre_family operation_seconds_total "Summed latency of Lustre client operations."
    # One group per metric family, as the text format asks.
    LC_ALL=C sort "$tmp.body"
  } >"$tmp"
  rm -f "$tmp.types" "$tmp.body"
  # Atomic for the collector: it never reads a half-written file.
  mv "$tmp" "$OUT/node_counters.prom"
}

mkdir -p "$OUT"
while :; do
  write_once
  [ "$INTERVAL" -gt 0 ] || exit 0
  sleep "$INTERVAL"
done
