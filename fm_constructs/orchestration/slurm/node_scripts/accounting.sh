#!/usr/bin/env bash
# Slurm accounting and GRES types on the controller: accounting.sh <controller-ip> <gpus 0|1>
#
# slurm.conf includes accounting.conf from the same directory (slurm_includes.sh keeps the
# include line there). This script owns that file and writes into it:
# - GresTypes=gpu when some worker group has GPUs (the agent's node lines carry no GRES types);
# - with slurmdbd running against MariaDB on the controller, the accounting settings
#   (AccountingStorageType=accounting_storage/slurmdbd, job accounting every 30 s, GPUs as a
#   tracked resource), so `sacct` and `sreport` work.
# MariaDB ships on the HyperPod Slurm AMI; it is installed when missing. The database password
# is generated on the node, kept only in slurmdbd.conf (mode 0600, owned by the slurm user) and
# reused on a second run. If the database cannot be set up, the controller still starts
# without accounting and the reason is logged: accounting is not worth failing a cluster for.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
CONTROLLER_IP="$1"
GPUS="${2:-0}"
SLURM_ETC="${FM_ROOT}${SLURM_PREFIX}/etc"
ACCOUNTING_CONF="${SLURM_ETC}/accounting.conf"
SLURMDBD_CONF="${SLURM_ETC}/slurmdbd.conf"
DATABASE=slurm_acct_db

have_mariadb() {
  systemctl cat mariadb.service > /dev/null 2>&1
}

database_password() {
  # The password slurmdbd.conf already holds (a re-run), else a new random one.
  if [[ -f "$SLURMDBD_CONF" ]] && grep -q '^StoragePass=' "$SLURMDBD_CONF"; then
    sed -n 's/^StoragePass=//p' "$SLURMDBD_CONF" | head -n 1
  else
    python3 -c 'import secrets; print(secrets.token_hex(24))'
  fi
}

setup_slurmdbd() {
  if [[ ! -x "${FM_ROOT}${SLURM_PREFIX}/sbin/slurmdbd" ]]; then
    echo "accounting: this Slurm has no slurmdbd; accounting stays off" >&2
    return 1
  fi
  if ! have_mariadb; then
    retry 3 10 apt-get install -y -o DPkg::Lock::Timeout=120 mariadb-server || return 1
  fi
  systemctl enable mariadb
  systemctl start mariadb
  local password
  password="$(database_password)"
  mysql --user=root <<SQL || return 1
CREATE DATABASE IF NOT EXISTS ${DATABASE};
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '${password}';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '${password}';
GRANT ALL ON ${DATABASE}.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
SQL
  (
    umask 077
    cat > "$SLURMDBD_CONF" <<CONF
# Written by fm-constructs accounting.sh.
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StoragePort=3306
StorageUser=slurm
StoragePass=${password}
StorageLoc=${DATABASE}
CONF
  )
  if getent passwd slurm > /dev/null; then
    chown slurm:slurm "$SLURMDBD_CONF"
  fi
  mkdir -p "${FM_ROOT}/var/log/slurm"
  if ! systemctl cat slurmdbd.service > /dev/null 2>&1; then
    local changed
    changed="$(install_unit slurmdbd.service "[Unit]
Description=Slurm accounting daemon (fm-constructs)
After=network-online.target munge.service mariadb.service
Wants=network-online.target
Requires=munge.service mariadb.service

[Service]
Type=simple
ExecStart=${SLURM_PREFIX}/sbin/slurmdbd -D -s
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target")"
    [[ -z "$changed" ]] || systemctl daemon-reload
  fi
  systemctl enable slurmdbd
  systemctl restart slurmdbd
  retry 10 3 systemctl is-active --quiet slurmdbd
}

{
  echo "# Written by fm-constructs accounting.sh; rewritten on every run."
  if [[ "$GPUS" == "1" ]]; then
    echo "GresTypes=gpu"
  fi
} > "${ACCOUNTING_CONF}.fm-new"
if setup_slurmdbd; then
  cat >> "${ACCOUNTING_CONF}.fm-new" <<CONF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=${CONTROLLER_IP}
AccountingStoragePort=6819
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
CONF
  if [[ "$GPUS" == "1" ]]; then
    echo "AccountingStorageTRES=gres/gpu" >> "${ACCOUNTING_CONF}.fm-new"
  fi
  echo "accounting: slurmdbd with MariaDB on the controller"
else
  echo "accounting: slurmdbd could not be set up; Slurm runs without accounting" >&2
fi
mv "${ACCOUNTING_CONF}.fm-new" "$ACCOUNTING_CONF"
chmod 0644 "$ACCOUNTING_CONF"
