#!/usr/bin/env bash
# Installs and starts what EnderCloud and its tests need on a fresh Debian
# machine: the Docker engine (docker.io), Compose (docker-compose), a local
# registry (docker-registry),
# a static busybox for test images, Chromium (the panel's browser tests), HAProxy (the reference proxy `npm run
# bench:router` measures the router against; installed, never started as a
# service), and PostgreSQL/Redis when they are not already running.
# Idempotent: every step checks first. Needs root.
set -euo pipefail

log() { printf '[prepare-host] %s\n' "$*"; }
need_root() { [ "$(id -u)" = 0 ] || { echo "prepare-host: run as root (sudo bash $0)" >&2; exit 1; }; }

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
static_busybox() { [ -x /bin/busybox ] && { ldd /bin/busybox 2>&1 || true; } | grep -q 'not a dynamic'; }
static_busybox || missing+=(busybox-static)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# The web panel's browser tests (test/web) drive Debian's chromium through playwright-core.
[ -x /usr/bin/chromium ] || missing+=(chromium)
# nsenter starts the multihost tests' dockerds in their network namespaces (test/support/netns-hosts.ts).
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
# The bench starts its own haproxy (-db, config in a temp dir); Debian's package would start the
# service on install where an init system runs it, so stop and disable it right after.
haproxy_missing=0
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || { missing+=(haproxy); haproxy_missing=1; }
if [ "${#missing[@]}" -gt 0 ]; then
  need_root
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
  if [ "$haproxy_missing" = 1 ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now haproxy >/dev/null 2>&1 || true
  fi
fi

# Docker engine: start dockerd in the background when nothing answers.
if ! docker info >/dev/null 2>&1; then
  need_root
  log "starting dockerd"
  mkdir -p /var/log
  nohup dockerd >/var/log/endercloud-dockerd.log 2>&1 &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "prepare-host: dockerd did not start; see /var/log/endercloud-dockerd.log" >&2; tail -20 /var/log/endercloud-dockerd.log >&2; exit 1; }
fi
log "docker engine $(docker version --format '{{.Server.Version}}')"

# Bun: a supported alternative runtime for the agent (the npm package installs it).
if ! command -v bun >/dev/null 2>&1; then
  log "installing bun (npm package)"
  npm install -g --no-audit --no-fund bun >/dev/null 2>&1 || log "bun could not be installed; the bun entry-point tests will be skipped"
fi
# node-gyp (used by bun install for better-sqlite3) finds Node's headers here
# instead of downloading them, which a machine without internet cannot do.
[ -d /usr/include/node ] && export npm_config_nodedir=/usr

if [ "${PREPARE_HOST_SERVICES:-1}" = 1 ]; then
  # PostgreSQL on 127.0.0.1:5432 (for the PostgreSQL store tests).
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    if ! command -v pg_ctlcluster >/dev/null 2>&1; then
      need_root; log "installing postgresql"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    log "starting postgresql"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    for _ in $(seq 1 60); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 0.5; done
  fi
  pg_isready -h 127.0.0.1 -p 5432 -q || { echo "prepare-host: PostgreSQL is not answering on 127.0.0.1:5432" >&2; exit 1; }

  # Redis on 127.0.0.1:6379 (for the fan-out tests).
  if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
    if ! command -v redis-server >/dev/null 2>&1; then
      need_root; log "installing redis-server"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    fi
    log "starting redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 40); do (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && break; sleep 0.25; done
  fi
fi
log "ready"
