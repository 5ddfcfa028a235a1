#!/usr/bin/env bash
# after_fsx.d step: the cluster's users, the same on every node, with their homes and SSH keys
# on the shared file system. Called as `bash 10-users.sh <role> <group> <params>`.
#
# For the AMI's default user (ubuntu) and every user of the provisioning parameters' `users`
# list (name, uid, optional gid and supplementary groups):
# - the account exists with that uid and primary gid (a group named after the user; gid
#   defaults to the uid) on every node, so srun, file ownership on /fsx and MPI agree;
#   supplementary groups missing on the node are created as node-local system groups;
# - its home is <mount point>/home/<user>, created once (from the default user's old home, or
#   /etc/skel) by the first node that gets there;
# - an ed25519 key pair is generated once in that home's .ssh and its public key is in
#   authorized_keys, so the user reaches every node by ssh (mpirun over ssh) without a
#   password. Nodes take a lock on the shared file system (mounted with flock) around this,
#   so concurrent nodes and re-runs never generate a second key.
# A client configuration (/etc/ssh/ssh_config.d/fm-cluster.conf) skips host-key checks for
# the cluster's own node names: HyperPod replaces nodes (new host keys) under the same names.
# An account that exists with another uid or gid stops the step: files on /fsx would
# otherwise belong to the wrong person. Idempotent.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../lib.sh
source "${SCRIPT_DIR}/lib.sh"
after_fsx_step all "$@"
DEFAULT_USER="${FM_DEFAULT_USER:-ubuntu}"
MOUNT_POINT="$(param fsx.mount_point)"
MOUNT_POINT="${MOUNT_POINT:-/fsx}"
HOME_ROOT="${MOUNT_POINT}/home"
LOCK_TIMEOUT="${USERS_LOCK_TIMEOUT:-300}"
SSH_CONFIG=/etc/ssh/ssh_config.d/fm-cluster.conf

profile_users() {
  # One line per user of the parameters: name, uid, gid and the supplementary groups joined
  # by commas ("-" for none), tab-separated.
  local name groups
  local -a names
  read -r -a names <<< "$(param users)"
  for name in "${names[@]}"; do
    groups="$(param "users.${name}.groups")"
    printf '%s\t%s\t%s\t%s\n' "$name" "$(param "users.${name}.uid")" \
      "$(param "users.${name}.gid")" "${groups:--}"
  done
}

field() {
  # field <getent line> <n>: the n-th colon-separated field.
  cut -d: -f"$2" <<< "$1"
}

ensure_group() {
  # ensure_group <name> <gid>: the group exists with exactly that gid.
  local entry
  if entry="$(getent group "$1")"; then
    if [[ "$(field "$entry" 3)" != "$2" ]]; then
      log "group $1 has gid $(field "$entry" 3) on this node, the cluster's users need $2"
      return 1
    fi
    return 0
  fi
  if entry="$(getent group "$2")"; then
    log "gid $2 (for group $1) belongs to group $(field "$entry" 1) on this node"
    return 1
  fi
  groupadd --gid "$2" "$1"
}

ensure_user() {
  # ensure_user <name> <uid> <gid> <home>: the account exists with that uid, gid and home.
  local name="$1" uid="$2" gid="$3" home="$4" entry
  if entry="$(getent passwd "$name")"; then
    if [[ "$(field "$entry" 3)" != "$uid" || "$(field "$entry" 4)" != "$gid" ]]; then
      log "user ${name} is ${uid}:${gid} in the profile but $(field "$entry" 3):$(field "$entry" 4) on this node"
      return 1
    fi
    if [[ "$(field "$entry" 6)" != "$home" ]] && ! usermod --home "$home" "$name"; then
      # usermod refuses while the user runs processes; the next run (a reboot's re-run or
      # UpdateClusterSoftware) moves the home then. The node is usable meanwhile.
      log "could not move ${name}'s home to ${home} on this node yet; it stays $(field "$entry" 6)"
    fi
    return 0
  fi
  if entry="$(getent passwd "$uid")"; then
    log "uid ${uid} (for user ${name}) belongs to user $(field "$entry" 1) on this node"
    return 1
  fi
  useradd --uid "$uid" --gid "$gid" --home-dir "$home" --no-create-home --shell /bin/bash "$name"
}

ensure_supplementary_groups() {
  # ensure_supplementary_groups <name> <group,group,...|->
  local name="$1" group
  [[ "$2" != "-" ]] || return 0
  local -a groups
  IFS=, read -r -a groups <<< "$2"
  for group in "${groups[@]}"; do
    getent group "$group" > /dev/null || groupadd --system "$group"
  done
  usermod --append --groups "$2" "$name"
}

populate_home() {
  # populate_home <home> <uid> <gid> <source>: create the shared home from <source> once.
  local home="${FM_ROOT}$1"
  [[ ! -d "$home" ]] || return 0
  mkdir "$home"
  if [[ -d "${FM_ROOT}$4" ]]; then
    cp -a "${FM_ROOT}$4/." "$home/"
  fi
  chown -R "$2:$3" "$home"
  chmod 0750 "$home"
}

ensure_keys() {
  # ensure_keys <home> <uid> <gid> <name>: one key pair in <home>/.ssh, its public key
  # authorized; the pair is generated only when absent.
  local ssh_dir="${FM_ROOT}$1/.ssh" public
  local key="${ssh_dir}/id_ed25519"
  mkdir -p "$ssh_dir"
  if [[ ! -f "$key" ]]; then
    ssh-keygen -q -t ed25519 -N "" -C "$4@$(param cluster_name)" -f "$key"
  elif [[ ! -f "${key}.pub" ]]; then
    ssh-keygen -y -f "$key" > "${key}.pub"
  fi
  public="$(cat "${key}.pub")"
  touch "${ssh_dir}/authorized_keys"
  grep -qxF "$public" "${ssh_dir}/authorized_keys" || echo "$public" >> "${ssh_dir}/authorized_keys"
  chmod 0700 "$ssh_dir"
  chmod 0600 "$key" "${ssh_dir}/authorized_keys"
  chmod 0644 "${key}.pub"
  chown -R "$2:$3" "$ssh_dir"
}

write_ssh_config() {
  local path="${FM_ROOT}${SSH_CONFIG}"
  mkdir -p "$(dirname "$path")"
  cat > "$path" << 'CONF'
# fm-constructs: the cluster's nodes (HyperPod names them ip-<a>-<b>-<c>-<d> and replaces them
# under the same names with new host keys) and this node are reached without host-key checks,
# so mpirun and ssh between nodes never stop at a prompt.
Host localhost 127.0.0.1 ip-*-*-*-*
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    CheckHostIP no
    LogLevel ERROR
CONF
  chmod 0644 "$path"
}

setup_user() {
  # setup_user <name> <uid> <gid> <groups> <old-home>: account, shared home and keys.
  local home="${HOME_ROOT}/$1"
  populate_home "$home" "$2" "$3" "$5"
  ensure_keys "$home" "$2" "$3" "$1"
  ensure_user "$1" "$2" "$3" "$home"
  ensure_supplementary_groups "$1" "$4"
  echo "users: $1 (${2}:${3}) at ${home}"
}

mkdir -p "${FM_ROOT}${HOME_ROOT}"
chmod 0755 "${FM_ROOT}${HOME_ROOT}"
write_ssh_config

# One node at a time creates homes and keys (a cluster-wide lock: /fsx is mounted with flock).
exec {lock}> "${FM_ROOT}${HOME_ROOT}/.fm-users.lock"
if ! flock --wait "$LOCK_TIMEOUT" "$lock"; then
  log "no lock on ${HOME_ROOT}/.fm-users.lock after ${LOCK_TIMEOUT}s"
  exit 1
fi

if entry="$(getent passwd "$DEFAULT_USER")"; then
  setup_user "$DEFAULT_USER" "$(field "$entry" 3)" "$(field "$entry" 4)" - "$(field "$entry" 6)"
else
  echo "users: no ${DEFAULT_USER} user on this node"
fi
while IFS=$'\t' read -r name uid gid groups; do
  ensure_group "$name" "$gid"
  setup_user "$name" "$uid" "$gid" "$groups" /etc/skel
done < <(profile_users)
