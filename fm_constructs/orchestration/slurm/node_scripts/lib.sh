# shellcheck shell=bash
# Helpers shared by the lifecycle scripts (sourced, never run on its own).
#
# FM_ROOT prefixes every path the scripts read or write on the node. It is empty on a real node;
# the tests set it to a temporary directory so the real scripts run in a simulated node.
export FM_ROOT="${FM_ROOT:-}"
# Package installs never ask: no terminal is attached (debconf's questions, needrestart's
# service list on Ubuntu 22.04).
export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a
# Where Slurm is installed: /opt/slurm on the HyperPod AMIs; a PCS node sets it to the PCS
# installer's prefix before running the scripts.
export SLURM_PREFIX="${SLURM_PREFIX:-/opt/slurm}"

log() {
  # log <message...>: one line on stderr, named after the running script.
  echo "${0##*/}: $*" >&2
}

retry() {
  # retry <attempts> <first-delay-seconds> <command...>: run the command until it succeeds,
  # doubling the delay after each failure (capped at 60 s); fails after <attempts> tries.
  local attempts="$1" delay="$2" attempt=1
  shift 2
  until "$@"; do
    if ((attempt >= attempts)); then
      log "giving up after ${attempt} attempts: $*"
      return 1
    fi
    log "attempt ${attempt} of ${attempts} failed: $*; retrying in ${delay}s"
    sleep "$delay"
    attempt=$((attempt + 1))
    delay=$((delay * 2 > 60 ? 60 : delay * 2))
  done
}

wait_for() {
  # wait_for <timeout-seconds> <interval-seconds> <command...>: run the command every
  # <interval> seconds until it succeeds; fails once <timeout> seconds have passed without
  # success. FM_WAITED holds the seconds waited, for the caller's message.
  local timeout="$1" interval="$2"
  shift 2
  FM_WAITED=0
  until "$@"; do
    if ((FM_WAITED >= timeout)); then
      return 1
    fi
    sleep "$interval"
    FM_WAITED=$((FM_WAITED + interval))
  done
}

declare -gA FM_PARAM_VALUES=()
FM_PARAMS_LOADED=""

load_params() {
  # Read provisioning_parameters.json ($PARAMS) into FM_PARAM_VALUES, flattened to dotted
  # keys: lists of tables are keyed by each entry's instance_group_name or name
  # (worker_groups.<group>.<key>, users.<name>.uid) and the list itself holds those names,
  # space-separated (users = "alice bob"); lists of values are joined by commas. The flat
  # text is exported (FM_PARAMS_FLAT, for FM_PARAMS_FILE), so the scripts a script starts
  # read the file no second time.
  local key value
  FM_PARAM_VALUES=()
  if [[ "${FM_PARAMS_FILE:-}" != "$PARAMS" ]]; then
    FM_PARAMS_FLAT="$(python3 - "$PARAMS" << 'PY'
import json, sys

def text(value):
    return str(value).lower() if isinstance(value, bool) else str(value)

def walk(prefix, value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(prefix + key + ".", item)
    elif isinstance(value, list):
        tables = [item for item in value if isinstance(item, dict)]
        if tables:
            names = []
            for item in tables:
                name = item.get("instance_group_name", item.get("name"))
                if name is not None:
                    names.append(str(name))
                    yield from walk(prefix + str(name) + ".", item)
            yield prefix[:-1], " ".join(names)
        else:
            yield prefix[:-1], ",".join(text(item) for item in value)
    elif value is not None:
        yield prefix[:-1], text(value)

with open(sys.argv[1]) as handle:
    for key, value in walk("", json.load(handle)):
        print(key + "\t" + value)
PY
    )"
    export FM_PARAMS_FILE="$PARAMS" FM_PARAMS_FLAT
  fi
  while IFS=$'\t' read -r key value; do
    [[ -n "$key" ]] && FM_PARAM_VALUES["$key"]="$value"
  done <<< "$FM_PARAMS_FLAT"
  FM_PARAMS_LOADED=1
}

param() {
  # param <dotted.key>: one value of the provisioning parameters (empty for null or missing,
  # booleans as true/false). Call load_params once first, or every call reads the file.
  [[ -n "$FM_PARAMS_LOADED" ]] || load_params
  printf '%s\n' "${FM_PARAM_VALUES[$1]:-}"
}

after_fsx_step() {
  # after_fsx_step <roles> <role> <group> <params>: the start of every after_fsx.d step, which
  # on_create.sh runs as `bash <step> <role> <group> <params>`. Sets ROLE and PARAMS from
  # those arguments (no step reads the group yet; group_param takes it) and loads the
  # parameters, or ends the step (exit 0) on a node whose role is not among <roles>
  # (space-separated, or "all").
  local roles="$1"
  ROLE="$2" PARAMS="$4"
  if [[ "$roles" != all && " ${roles} " != *" ${ROLE} "* ]]; then
    exit 0
  fi
  load_params
}

group_param() {
  # group_param <group> <key>: a key of that group's worker_groups entry (empty when absent).
  param "worker_groups.$1.$2"
}

refuse() {
  # refuse <path> <message...>: log "refusing <message>", remove <path> (a download, or what
  # it extracted to), fail. Callers return its status: `refuse ...; return`.
  local path="$1"
  shift
  log "refusing $*"
  rm -rf "${path:?}"
  return 1
}

verify_download() {
  # verify_download <file> <name>: true when the sha256 of <file> (the downloaded release file
  # <name>) is the digest the library's pins give that name (download_sha256 in the
  # provisioning parameters, from pins.toml [binaries]). A file whose name has no pinned digest
  # or whose digest differs is refused: logged, deleted, false. The pins, not the download
  # site or a sums file beside it, decide what runs as root.
  local file="$1" name="$2" pinned actual
  pinned="$(param "download_sha256.${name}")"
  if [[ -z "$pinned" ]]; then
    refuse "$file" "${name}: no sha256 is pinned for it (pins.toml [binaries])"
    return
  fi
  actual="$(sha256sum "$file" | awk '{print $1}')"
  if [[ "$actual" != "$pinned" ]]; then
    refuse "$file" "${name}: its sha256 ${actual} is not the pinned ${pinned}"
    return
  fi
  echo "${0##*/}: ${name}: sha256 matches the pinned ${pinned}"
}

release_arch() {
  # The node's architecture as release files name it (amd64, arm64): the names pins.toml
  # [binaries] pins a sha256 for.
  uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/'
}

download() {
  # download <url> <file> <name>: fetch <url> to <file>, failing on HTTP errors, tried 5 times
  # with a doubling delay; false, with <file> removed and "could not download <name>" logged,
  # when it cannot. Callers check what they downloaded (fetch_pinned, fetch_pinned_source).
  if ! retry 5 5 curl -fsSL --connect-timeout 10 -o "$2" "$1"; then
    log "could not download $3"
    rm -f "$2"
    return 1
  fi
}

fetch_pinned() {
  # fetch_pinned <url> <file> <name>: download <url> to <file> and keep it only when
  # verify_download accepts it as the release file <name>; false, with <file> removed, when
  # either fails. Every release file a node runs as root comes through here, so the download
  # and the check stay together.
  download "$1" "$2" "$3" && verify_download "$2" "$3"
}

source_tree() {
  # source_tree <dir>: the git tree id of what <dir> holds (each file's content, its
  # executable bit, symbolic links, as git records a commit's tree). A private repository and
  # index outside <dir>, no system or user configuration and no attribute, ignore or
  # line-ending rules, so nothing in <dir> or on the node changes how it is read.
  local dir git_dir tree
  dir="$(cd "$1" && pwd)" || return 1
  git_dir="$(mktemp -d)"
  local -a git=(env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_DIR="$git_dir"
    GIT_WORK_TREE="$dir" GIT_INDEX_FILE="${git_dir}/index" git -c core.autocrlf=false
    -c core.fileMode=true -c core.symlinks=true -c core.attributesFile=/dev/null
    -c core.excludesFile=/dev/null -c core.safecrlf=false)
  if "${git[@]}" init -q && "${git[@]}" -C "$dir" add --all --force . \
    && tree="$("${git[@]}" write-tree)"; then
    rm -rf "$git_dir"
    echo "$tree"
    return 0
  fi
  rm -rf "$git_dir"
  return 1
}

fetch_pinned_source() {
  # fetch_pinned_source <url> <work> <name> <top>: download the source archive <name> from
  # <url> into <work> and extract it there; true when <work>/<top> then holds exactly the
  # tree the pins give <name> (source_git_tree in the provisioning parameters, from pins.toml
  # [binaries.<project>.git_tree]: the tree of the release tag's commit). A host's archive of
  # a tag is made on request and its compression may change, so the content is pinned, not
  # the archive's bytes. Refused (logged, <work>/<top> removed, false): no tree pinned, git
  # missing, a download, extraction or tree that fails, a .git entry in the archive.
  local url="$1" work="$2" name="$3" top="$4" pinned actual
  pinned="$(param "source_git_tree.${name}")"
  if [[ -z "$pinned" ]]; then
    log "refusing ${name}: no source tree is pinned for it (pins.toml [binaries])"
    return 1
  fi
  if ! command -v git > /dev/null; then
    log "refusing ${name}: git is not installed, so its source tree cannot be checked"
    return 1
  fi
  download "$url" "${work}/${name}" "$name" || return
  if ! tar -xzf "${work}/${name}" -C "$work" --no-same-owner || [[ ! -d "${work}/${top}" ]]; then
    refuse "${work}/${top}" "${name}: it does not extract to ${top}/"
    return
  fi
  rm -f "${work}/${name}"
  if [[ -n "$(find "${work}/${top}" -name .git -print -quit)" ]]; then
    refuse "${work}/${top}" "${name}: it holds a .git entry, which no release tree has"
    return
  fi
  actual="$(source_tree "${work}/${top}" || true)"
  if [[ "$actual" != "$pinned" ]]; then
    refuse "${work}/${top}" \
      "${name}: its source tree ${actual:-(unreadable)} is not the pinned ${pinned}"
    return
  fi
  echo "${0##*/}: ${name}: source tree matches the pinned ${pinned}"
}

install_unit() {
  # install_unit <name> <content>: write /etc/systemd/system/<name> when its content changed;
  # prints "changed" when it did, so callers reload systemd only then.
  local path="${FM_ROOT}/etc/systemd/system/$1"
  mkdir -p "$(dirname "$path")"
  if [[ -f "$path" ]] && [[ "$(cat "$path")" == "$2" ]]; then
    return 0
  fi
  printf '%s\n' "$2" > "$path"
  chmod 0644 "$path"
  echo changed
}

stage_scripts() {
  # stage_scripts <dir> <file>...: copy the named scripts (from beside this one) and the
  # parameters into <dir> on the node, where a systemd unit runs them after provisioning.
  local stage="${FM_ROOT}$1" file
  shift
  mkdir -p "$stage"
  for file in "$@"; do
    install -m 0644 "${SCRIPT_DIR}/${file}" "${stage}/${file}"
  done
  install -m 0644 "$PARAMS" "${stage}/provisioning_parameters.json"
}

install_retrying_job() {
  # install_retrying_job <name> <after> <what> <retry-what> <first-delay> <command>: install
  # and enable the oneshot <name>.service that runs <command> (after network-online.target and
  # <after>) and the <name>.timer that runs it <first-delay> after boot, then 10 minutes after
  # each run; <what> and <retry-what> describe them. systemd reloads only when a unit changed.
  local changed
  changed="$(install_unit "$1.service" "[Unit]
Description=fm-constructs: $3
Wants=network-online.target
After=network-online.target $2

[Service]
Type=oneshot
ExecStart=$6")"
  changed+="$(install_unit "$1.timer" "[Unit]
Description=fm-constructs: $4

[Timer]
OnBootSec=$5
OnUnitInactiveSec=10min

[Install]
WantedBy=timers.target")"
  [[ -z "$changed" ]] || systemctl daemon-reload
  systemctl enable --now "$1.timer"
}

is_mounted() {
  # is_mounted <path>: true when something is mounted at <path> on this node.
  mountpoint -q "${FM_ROOT}$1"
}

first_mounted() {
  # first_mounted <path>...: print the first <path> something is mounted at; false if none.
  local path
  for path in "$@"; do
    if is_mounted "$path"; then
      echo "$path"
      return 0
    fi
  done
  return 1
}

#: Where the scripts keep what they know about the node between runs.
FM_STATE_DIR=/var/lib/fm-constructs
#: The components (enroot, pyxis) this node still lacks, one a line (containers.sh writes it,
#: node_components.sh drains or resumes the node by it).
FM_MISSING_FILE="${FM_STATE_DIR}/missing-components"

record_missing() {
  # record_missing [component...]: the components this node still lacks (none: an empty file).
  local file="${FM_ROOT}${FM_MISSING_FILE}"
  mkdir -p "$(dirname "$file")"
  if (($#)); then
    printf '%s\n' "$@" > "$file"
  else
    : > "$file"
  fi
}

missing_components() {
  # The components recorded missing, space-separated (empty when none or never recorded).
  local file="${FM_ROOT}${FM_MISSING_FILE}"
  [[ -s "$file" ]] && tr '\n' ' ' < "$file" | sed 's/ $//'
  return 0
}
