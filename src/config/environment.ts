/** Who reads a variable: a worker, a client (Redeliver.connect and every CLI command that talks to Temporal), the codec server, the HTTP API (`redeliver serve`, a client too), the MQTT bridge (`redeliver bridge`, a client too). */
export type Reader = 'worker' | 'client' | 'codec-server' | 'api' | 'bridge';

export interface EnvironmentVariable {
  name: string;
  readBy: readonly Reader[];
  meaning: string;
  default: string;
}

const BOTH: readonly Reader[] = ['worker', 'client'];

/**
 * Every environment variable redeliver reads, once, with its meaning and default: docs/deploying.md shows
 * this table, and the tests check the Dockerfile and docker-compose.yml against it. The `TEMPORAL_*`
 * variables are Temporal's own, read through @temporalio/envconfig as the Temporal CLI and SDKs read them.
 */
export const ENVIRONMENT: readonly EnvironmentVariable[] = [
  {
    name: 'TEMPORAL_ADDRESS',
    readBy: BOTH,
    meaning:
      'host:port of the Temporal frontend; Temporal Cloud: `<namespace>.<account>.tmprl.cloud:7233` (mTLS) or the regional endpoint (API key)',
    default: '`localhost:7233`',
  },
  { name: 'TEMPORAL_NAMESPACE', readBy: BOTH, meaning: 'Temporal namespace', default: '`default`' },
  { name: 'TEMPORAL_API_KEY', readBy: BOTH, meaning: 'API key (Temporal Cloud); turns TLS on', default: 'none' },
  {
    name: 'TEMPORAL_TLS',
    readBy: BOTH,
    meaning: '`true` or `false`: TLS to the frontend',
    default: 'off, on with an API key or a TLS setting',
  },
  {
    name: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
    readBy: BOTH,
    meaning: 'mTLS client certificate, a PEM file (`…_DATA`: the PEM itself)',
    default: 'none',
  },
  {
    name: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
    readBy: BOTH,
    meaning: "the client certificate's private key, a PEM file (`…_DATA`: the PEM itself)",
    default: 'none',
  },
  { name: 'TEMPORAL_TLS_CLIENT_CERT_DATA', readBy: BOTH, meaning: 'mTLS client certificate, PEM', default: 'none' },
  { name: 'TEMPORAL_TLS_CLIENT_KEY_DATA', readBy: BOTH, meaning: "the client certificate's private key, PEM", default: 'none' },
  {
    name: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    readBy: BOTH,
    meaning: "CA that signed the server's certificate, a PEM file (`…_DATA`: the PEM itself)",
    default: 'the system trust store',
  },
  {
    name: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
    readBy: BOTH,
    meaning: "CA that signed the server's certificate, PEM",
    default: 'the system trust store',
  },
  {
    name: 'TEMPORAL_TLS_SERVER_NAME',
    readBy: BOTH,
    meaning: "name to verify the server's certificate against (SNI)",
    default: 'the host of `TEMPORAL_ADDRESS`',
  },
  {
    name: 'TEMPORAL_GRPC_META_<NAME>',
    readBy: BOTH,
    meaning: 'a gRPC header sent with every call (`_` in the name becomes `-`)',
    default: 'none',
  },
  {
    name: 'TEMPORAL_PROFILE',
    readBy: BOTH,
    meaning: 'profile to take from the config file; the variables above win over it',
    default: '`default`',
  },
  {
    name: 'TEMPORAL_CONFIG_FILE',
    readBy: BOTH,
    meaning: "Temporal's TOML client configuration",
    default: '`~/.config/temporalio/temporal.toml` if it exists',
  },
  { name: 'REDELIVER_TASK_QUEUE', readBy: BOTH, meaning: 'task queue the workers poll and the clients submit to', default: '`redeliver`' },
  {
    name: 'REDELIVER_SINGLE_SUBMIT',
    readBy: ['client'],
    meaning:
      'how a single submit makes its first attempt: its delivery\'s workflow (`workflow`), or a standalone activity that starts no workflow unless the message is not delivered at once (`standalone`, where the server runs them; docs/batches.md, "A single submit")',
    default: '`workflow`',
  },
  {
    name: 'REDELIVER_ENCRYPTION_KEYS',
    readBy: ['worker', 'client', 'codec-server'],
    meaning: 'payload encryption keys, `id:base64key,…` (32-byte AES-256-GCM keys; the first encrypts, all decrypt)',
    default: 'none: payloads are stored as they are',
  },
  {
    name: 'REDELIVER_ENCRYPTION_KEYS_FILE',
    readBy: ['worker', 'client', 'codec-server'],
    meaning: 'a file holding the keys in the same form (a Docker or Kubernetes secret); instead of the variable above',
    default: 'none',
  },
  { name: 'REDELIVER_MAX_CONCURRENT_ATTEMPTS', readBy: ['worker'], meaning: 'attempts in flight at once per worker', default: '200' },
  {
    name: 'REDELIVER_MAX_CONCURRENT_WORKFLOW_TASKS',
    readBy: ['worker'],
    meaning: 'workflow tasks processed at once per worker',
    default: "the SDK's (40)",
  },
  {
    name: 'REDELIVER_SHUTDOWN_GRACE',
    readBy: ['worker', 'api'],
    meaning:
      'after SIGTERM, how long attempts in flight may go on before they are handed back (`ms` duration: `20s`, `1m`); the API: how long requests in flight may go on',
    default: '`20s`',
  },
  {
    name: 'REDELIVER_RETRY_BUDGET',
    readBy: ['worker'],
    meaning:
      'retries per second to one endpoint, all workers of the task queue together (`10`, `2.5/s`), or `off` ([endpoint health](endpoint-health.md))',
    default: '`10`',
  },
  {
    name: 'REDELIVER_RETRY_BUDGET_BURST',
    readBy: ['worker'],
    meaning: 'retries to one endpoint that may go out at once on top of the rate',
    default: '`20`',
  },
  {
    name: 'REDELIVER_ENDPOINT_MAX_IN_FLIGHT',
    readBy: ['worker'],
    meaning:
      "attempts in flight at once to one endpoint (first attempts, batches' requests, retries), all workers of the task queue together, for endpoints without a limit of their own (`redeliver endpoint set`), or `off`",
    default: '`off`',
  },
  {
    name: 'REDELIVER_ENDPOINT_RATE',
    readBy: ['worker'],
    meaning:
      'attempts per second to one endpoint (`200`, `200/s`, `12000/min`), all workers together, for endpoints without their own, or `off`',
    default: '`off`',
  },
  {
    name: 'REDELIVER_ENDPOINT_TIMEOUT_FLOOR',
    readBy: ['worker'],
    meaning:
      "attempts that time out under a `target.timeout` their producer chose below this are the producer's failure: they count for the delivery, not against the endpoint's health, breaker or auto-disable (`1s`, `500ms`; `0`: every timeout counts)",
    default: '`1s`',
  },
  {
    name: 'REDELIVER_ENDPOINT_HEALTH',
    readBy: ['worker'],
    meaning: "report attempts to each endpoint's workflow (health, downtime, the budget's share per worker): `true` / `false`",
    default: '`true`',
  },
  {
    name: 'REDELIVER_OUTAGE_HOLD',
    readBy: ['worker'],
    meaning:
      'while an endpoint fails, a batch\'s messages to it wait together in an outage hold and are released at the recovery pace (`on`), or each becomes a delivery of its own (`off`); an endpoint\'s own `outage` setting wins (docs/endpoint-health.md, "Outages: holds and the recovery pace")',
    default: '`on`',
  },
  {
    name: 'REDELIVER_RECOVERY_MAX_IN_FLIGHT',
    readBy: ['worker'],
    meaning:
      "the recovery pace's cap: held messages in flight at once to one endpoint from one worker as it recovers (within the endpoint's own max-in-flight share)",
    default: '`128`',
  },
  {
    name: 'REDELIVER_MAX_ENDPOINTS_PER_TENANT',
    readBy: ['worker'],
    meaning:
      "distinct endpoints one tenant's attempts may open endpoint workflows for within 10 minutes, per worker; beyond it their reports reach only workflows already running ([endpoint health](endpoint-health.md)), or `off`",
    default: '`100`',
  },
  {
    name: 'REDELIVER_ALLOW_ADDRESSES',
    readBy: ['worker'],
    meaning:
      'SSRF guard allow-list: range names (`loopback`, `private`, `link-local`, `cgnat`, `multicast`, `metadata`, `this-network`, `reserved`), CIDRs or addresses, comma-separated',
    default: 'none: public addresses only',
  },
  {
    name: 'REDELIVER_MQTT_CREDENTIALS_<NAME>',
    readBy: ['worker', 'bridge'],
    meaning:
      'the MQTT credential a target names (`credential: "<name>"`), as JSON `{"username": …, "password": …, "brokers": ["mqtts://host:8883", …], "tenants": ["acme", …]}`; `brokers` is required: the credential is sent to no other broker; `tenants` is required: the tenants whose deliveries and subscriptions may use it (`["*"]`: all; the login of the bridge itself: `["redeliver"]`); an entry may be `{"url": …, "ca" or "caFile": …, "servername": …}`, the TLS trust for that broker (a delivery naming a credential may not bring its own). Checked at start, read again at every attempt',
    default: 'none',
  },
  {
    name: 'REDELIVER_MQTT_CREDENTIALS_FILE',
    readBy: ['worker', 'bridge'],
    meaning: 'a JSON file of MQTT credentials by name (each with its `brokers` and `tenants`), for those without a variable of their own',
    default: 'none',
  },
  {
    name: 'REDELIVER_SIGNING_SECRETS_<NAME>',
    readBy: ['worker'],
    meaning:
      'the signing secret an HTTP target names (`signing: "<name>"`), as JSON `{"secrets": ["whsec_…", …], "endpoints": ["https://host", …], "tenants": ["acme", …]}`: each request carries a Standard Webhooks signature per secret (several while rotating); `endpoints` is required: it signs for no other endpoint; `tenants` is required: it signs the deliveries of no other tenant (`["*"]`: all). Checked at start, read again at every request',
    default: 'none',
  },
  {
    name: 'REDELIVER_SIGNING_SECRETS_FILE',
    readBy: ['worker'],
    meaning: 'a JSON file of signing secrets by name (each with its `endpoints` and `tenants`), for those without a variable of their own',
    default: 'none',
  },
  {
    name: 'REDELIVER_OPERATOR_URLS',
    readBy: ['worker'],
    meaning:
      'http(s) URLs, comma-separated, that operational events (`endpoint.failing`, `endpoint.recovered`, `endpoint.disabled`, `deliveries.dead-lettered`) are delivered to, each event a delivery of its own (docs/endpoint-health.md)',
    default: 'none: no events',
  },
  {
    name: 'REDELIVER_OPERATOR_SIGNING_SECRET',
    readBy: ['worker'],
    meaning:
      'the name of the signing secret operational events are signed with (`REDELIVER_SIGNING_SECRETS_<NAME>`, bound to every operator URL, `"tenants": ["redeliver"]`)',
    default: 'none: required with `REDELIVER_OPERATOR_URLS`',
  },
  {
    name: 'REDELIVER_WORKFLOW_BUNDLE',
    readBy: ['worker'],
    meaning: 'a pre-built workflow bundle (`redeliver bundle`); the image sets it',
    default: 'none: the worker bundles the workflows at start',
  },
  {
    name: 'REDELIVER_PROMETHEUS_ADDRESS',
    readBy: ['worker'],
    meaning: "bind address of the SDK's Prometheus endpoint, `host:port` (metrics at `/metrics`)",
    default: 'none: no metrics',
  },
  {
    name: 'REDELIVER_HEALTH_ADDRESS',
    readBy: ['worker'],
    meaning: 'bind address of the health endpoint `/healthz` (200 while polling, 503 once stopping)',
    default: 'none',
  },
  { name: 'REDELIVER_LOG_LEVEL', readBy: ['worker'], meaning: '`TRACE`, `DEBUG`, `INFO`, `WARN` or `ERROR`', default: '`WARN`' },
  {
    name: 'OTEL_TRACES_EXPORTER',
    readBy: BOTH,
    meaning:
      'worker: `none`, `console` or `otlp` (needs an OTLP exporter package installed beside redeliver; reads `OTEL_EXPORTER_OTLP_*`); ' +
      "client: any value but `none` traces its calls with the application's tracer provider",
    default: '`none`',
  },
  { name: 'OTEL_SERVICE_NAME', readBy: ['worker'], meaning: 'service name on the spans', default: '`redeliver-worker`' },
  {
    name: 'REDELIVER_CODEC_TOKEN',
    readBy: ['codec-server'],
    meaning:
      "the secret every /encode and /decode request must carry: `Authorization: Bearer <token>`, or the UI's codec endpoint `https://…/<token>`; 16+ of `A-Z a-z 0-9 - _ . ~` (`openssl rand -hex 32`)",
    default: 'none: required',
  },
  {
    name: 'REDELIVER_CODEC_CORS_ORIGINS',
    readBy: ['codec-server'],
    meaning:
      "origins of the Temporal UI allowed to call the codec server from operators' browsers, comma-separated; other origins are refused",
    default: 'none',
  },
  {
    name: 'REDELIVER_CODEC_ALLOWED_HOSTS',
    readBy: ['codec-server'],
    meaning:
      "host names the codec server is reached by (a proxy's), comma-separated; a request addressed to any other name is refused (DNS rebinding)",
    default: '`localhost`, loopback addresses and `--host`',
  },
  {
    name: 'REDELIVER_API_KEYS_FILE',
    readBy: ['api'],
    meaning:
      'a JSON array of API keys, `{"key": "<secret>" or "sha256": "<hex>", "tenants": ["acme"] or ["*"], "roles": ["produce", "operate", "read"], "name"?, "rateLimit"?}` (docs/http-api.md, "Keys"); only their hashes are kept',
    default: 'none: this or `REDELIVER_API_KEYS` is required',
  },
  { name: 'REDELIVER_API_KEYS', readBy: ['api'], meaning: 'the same JSON array itself (a secret in the environment)', default: 'none' },
  {
    name: 'REDELIVER_API_RATE_LIMIT',
    readBy: ['api'],
    meaning:
      "requests per API key (per address before a key is known): `100`, `100/s`, `600/min`, `N/h`, or `off`; a key's `rateLimit` wins",
    default: '`100/s`',
  },
  {
    name: 'REDELIVER_TEMPORAL_UI_URL',
    readBy: ['api'],
    meaning: "the Temporal UI the console's delivery pages link to; off: no link",
    default: 'http://localhost:8233 (the UI of `redeliver dev`)',
  },
  {
    name: 'REDELIVER_API_BODY_LIMIT',
    readBy: ['api'],
    meaning: 'largest request body, in bytes (413 above it)',
    default: '4194304 (4 MiB)',
  },
  {
    name: 'REDELIVER_API_REQUEST_TIMEOUT',
    readBy: ['api'],
    meaning: 'how long a request, headers and body, may take to arrive whole; a slower one is answered 408 and closed (slow-loris)',
    default: '`30s`',
  },
  {
    name: 'REDELIVER_API_CONNECTION_TIMEOUT',
    readBy: ['api'],
    meaning:
      'how long a connection may go without a byte moving either way before it is closed (a client that never reads its answer); longer than a cancel may wait for an attempt in flight',
    default: '`6m`',
  },
  {
    name: 'REDELIVER_API_KEEP_ALIVE_TIMEOUT',
    readBy: ['api'],
    meaning:
      "how long a kept-alive connection may wait for its next request; behind a load balancer, longer than the balancer's idle timeout",
    default: '`72s`',
  },
  {
    name: 'REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS',
    readBy: ['api'],
    meaning:
      'connections open at once from one client address; more are closed as they open. Behind a proxy every client is its address: raise it, or `off`',
    default: '100',
  },
  {
    name: 'REDELIVER_API_TLS_CERT_FILE',
    readBy: ['api'],
    meaning: 'certificate chain (PEM) to serve HTTPS with; with `REDELIVER_API_TLS_KEY_FILE`, its private key',
    default: 'none: plain HTTP',
  },
  { name: 'REDELIVER_API_TLS_KEY_FILE', readBy: ['api'], meaning: "the certificate's private key (PEM)", default: 'none' },
];

/** Whether `name` is one of the variables above (`TEMPORAL_GRPC_META_<NAME>` stands for a family). */
export function isKnownVariable(name: string): boolean {
  return ENVIRONMENT.some((v) =>
    v.name.endsWith('<NAME>') ? name.startsWith(v.name.slice(0, -'<NAME>'.length)) && name.length > v.name.length - 6 : v.name === name,
  );
}
