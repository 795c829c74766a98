#!/usr/bin/env bash
# Runs `npm run test:unit` with no reachable Docker engine, to show the unit run
# needs none. As root (with unshare), the engine's socket is covered by /dev/null
# in a private mount namespace of this process only: dockerd keeps running and
# everything else on the machine still reaches it. DOCKER_SOCKET (what the test
# support reads) and DOCKER_HOST point nowhere as well.
set -euo pipefail
cd "$(dirname "$0")/../orchestrator"
export DOCKER_SOCKET=/nonexistent/docker.sock DOCKER_HOST=unix:///nonexistent/docker.sock
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
  exec unshare --mount --propagation private bash -c '
    for s in /run/docker.sock /var/run/docker.sock; do if [ -S "$s" ]; then mount --bind /dev/null "$s"; fi; done
    exec npm run test:unit'
fi
echo "not root: only DOCKER_SOCKET and DOCKER_HOST point nowhere; the default socket stays reachable" >&2
exec npm run test:unit
