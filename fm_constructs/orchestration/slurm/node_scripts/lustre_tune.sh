#!/usr/bin/env bash
# Lustre client tuning from the FSx for Lustre guide: lustre_tune.sh <modules|mounted>
#
# The guide's "Recommended client instance tuning for optimal performance"
# (https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance.html#performance-tips):
# - modules (before the Lustre modules load, so mount_fsx.sh runs it first): on clients with
#   more than 64 vCPUs, `ptlrpcd_per_cpt_max=32` for ptlrpc and `credits=2560` for ksocklnd,
#   in /etc/modprobe.d/fm-lustre.conf (read at every module load, so at every boot);
# - mounted (once the file system is mounted): on clients with more than 64 GiB of memory the
#   lock LRU (`lru_max_age=600000`, `lru_size` 100 per CPU); with more than 64 vCPUs more RPCs
#   in flight (osc 32, mdc 64, mdc modifying 50); directory statahead everywhere
#   (`statahead_max=512`, `statahead_agl=1`, `statahead_xattr=1` where the client has it).
#   `lctl set_param` does not survive a reboot, so fm-lustre-tune.service runs this step at
#   every boot once the file system is mounted.
# FM_CPUS and FM_MEMORY_GIB override what the node reports (nproc, /proc/meminfo).
set -euo pipefail

FM_ROOT="${FM_ROOT:-}"
STEP="${1:-mounted}"
CPUS="${FM_CPUS:-$(nproc)}"
MEMORY_GIB="${FM_MEMORY_GIB:-$(awk '/^MemTotal:/ {print int($2 / 1048576)}' /proc/meminfo)}"
MODPROBE_CONF="${FM_ROOT}/etc/modprobe.d/fm-lustre.conf"

case "$STEP" in
  modules)
    mkdir -p "$(dirname "$MODPROBE_CONF")"
    if ((CPUS > 64)); then
      printf '%s\n' "# fm-constructs: FSx for Lustre tuning for clients with more than 64 vCPUs." \
        "options ptlrpc ptlrpcd_per_cpt_max=32" "options ksocklnd credits=2560" > "$MODPROBE_CONF"
      echo "fm-lustre-tune: module options for ${CPUS} vCPUs in ${MODPROBE_CONF#"$FM_ROOT"}"
    else
      rm -f "$MODPROBE_CONF"
    fi
    ;;
  mounted)
    # Quoted: the patterns are lctl's, not file names for the shell to expand.
    settings=('llite.*.statahead_max=512' 'llite.*.statahead_agl=1')
    if ((MEMORY_GIB > 64)); then
      settings+=('ldlm.namespaces.*.lru_max_age=600000' "ldlm.namespaces.*.lru_size=$((100 * CPUS))")
    fi
    if ((CPUS > 64)); then
      settings+=('osc.*OST*.max_rpcs_in_flight=32' 'mdc.*.max_rpcs_in_flight=64'
        'mdc.*.max_mod_rpcs_in_flight=50')
    fi
    lctl set_param "${settings[@]}" > /dev/null
    if lctl get_param 'llite.*.statahead_xattr' > /dev/null 2>&1; then
      lctl set_param 'llite.*.statahead_xattr=1' > /dev/null
    fi
    echo "fm-lustre-tune: ${#settings[@]} client settings for ${CPUS} vCPUs, ${MEMORY_GIB} GiB"
    ;;
  *)
    echo "fm-lustre-tune: unknown step ${STEP} (modules or mounted)" >&2
    exit 2
    ;;
esac
