# syntax=docker/dockerfile:1
# The redeliver image: `redeliver worker` by default, `redeliver codec-server` with another command.
# Multi-stage: compiled and bundled with the dev dependencies, run without them, as the `node` user.
#   docker build -t redeliver .      docker compose up -d --scale worker=3   (docs/deploying.md)
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# as locked; `npm ci` refuses a lock without other platforms' optional packages (scripts/ensure-deps.js)
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# the workflow bundles are built here once, so that workers start without webpack; the tracing one
# carries the OpenTelemetry workflow interceptors (set REDELIVER_WORKFLOW_BUNDLE to it with OTEL_TRACES_EXPORTER), the
# encrypted one those and the failure converter that encrypts failure messages (with REDELIVER_ENCRYPTION_KEYS)
RUN npm run build \
 && node lib/cli/main.js bundle --out lib/workflow-bundle.js \
 && node lib/cli/main.js bundle --tracing --out lib/workflow-bundle-tracing.js \
 && node lib/cli/main.js bundle --tracing --encryption --out lib/workflow-bundle-encrypted.js \
 && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    REDELIVER_WORKFLOW_BUNDLE=/app/lib/workflow-bundle.js \
    REDELIVER_HEALTH_ADDRESS=0.0.0.0:8080 \
    REDELIVER_PROMETHEUS_ADDRESS=0.0.0.0:9464
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/lib ./lib
USER node
# 8080: /healthz (200 while polling, 503 once draining); 9464: /metrics for Prometheus
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains: polling stops, attempts in flight get REDELIVER_SHUTDOWN_GRACE (20 s) to finish, the rest are handed back
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "lib/cli/main.js"]
CMD ["worker"]
