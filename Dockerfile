# EnderCloud image: one image, several commands. The default command runs the
# orchestrator; the agent service runs `node dist/src/agent/index.js`.
# BASE_IMAGE is a build argument so tests can build on a locally made base.
ARG BASE_IMAGE=node:20-bookworm-slim

# Build stage: all dependencies, then TypeScript compiled to dist/.
FROM ${BASE_IMAGE} AS build
WORKDIR /app/orchestrator
ARG NPM_CI_FLAGS=""
COPY orchestrator/package.json orchestrator/package-lock.json ./
RUN npm ci ${NPM_CI_FLAGS}
COPY orchestrator/ ./
RUN npx tsc -p tsconfig.json --noEmit false --outDir dist

# Runtime stage: production dependencies and the compiled code only.
FROM ${BASE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app/orchestrator
ARG NPM_CI_FLAGS=""
COPY orchestrator/package.json orchestrator/package-lock.json ./
RUN npm ci --omit=dev ${NPM_CI_FLAGS} && npm cache clean --force
COPY --from=build /app/orchestrator/dist ./dist
EXPOSE 8080 8081
CMD ["node", "dist/src/server/index.js"]
