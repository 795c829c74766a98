# EnderCloud image: one image, several commands. The default command runs the
# orchestrator; the agent service runs `node dist/src/agent/index.js`, the
# router service `node dist/src/router/index.js`.
#
# BASE_IMAGE (both stages): any image with Node.js 20, npm and /bin/sh. The
# default comes from Docker Hub; with no registry reachable the build stops at
# the first FROM ("failed to resolve source metadata for
# docker.io/library/node:20-bookworm-slim"). Then build on a base that is
# already on this machine:
#   docker build --build-arg BASE_IMAGE=<local image> -t endercloud:local .
#   BASE_IMAGE=<local image> docker compose build    (or docker-compose build)
# e.g. a `docker load`ed node:20-bookworm-slim, a mirror, or the base the deploy
# test makes from the host's node and npm (docs/compose.md, "Building offline").
# NPM_CI_FLAGS: extra `npm ci` flags, e.g. --offline with an npm cache in the base.
ARG BASE_IMAGE=node:20-bookworm-slim

# Build stage: all dependencies, then TypeScript compiled to dist/, then the web
# panel (web/) built to static files. The orchestrator's own `npm ci` skips the
# panel here (../web is copied after it), so each part keeps its layer cache.
FROM ${BASE_IMAGE} AS build
WORKDIR /app/orchestrator
ARG NPM_CI_FLAGS=""
COPY orchestrator/package.json orchestrator/package-lock.json ./
RUN npm ci ${NPM_CI_FLAGS}
COPY orchestrator/ ./
RUN npx tsc -p tsconfig.json --noEmit false --outDir dist
WORKDIR /app/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --include=dev ${NPM_CI_FLAGS}
COPY web/ ./
RUN npm run build

# Runtime stage: production dependencies and the compiled code only.
FROM ${BASE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app/orchestrator
ARG NPM_CI_FLAGS=""
COPY orchestrator/package.json orchestrator/package-lock.json ./
RUN npm ci --omit=dev ${NPM_CI_FLAGS} && npm cache clean --force
COPY --from=build /app/orchestrator/dist ./dist
# The orchestrator serves the panel at / from ../web/dist (ENDERCLOUD_WEB_DIR overrides).
COPY --from=build /app/web/dist /app/web/dist
EXPOSE 8080 8081
CMD ["node", "dist/src/server/index.js"]
