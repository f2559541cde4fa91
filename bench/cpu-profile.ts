/**
 * A V8 CPU profile (`node --cpu-prof`, a .cpuprofile) made readable without dependencies: its samples within a
 * window, as folded stacks (`a;b;c <µs>`, the flame graph tools' text), a flame graph SVG, and the tables of a
 * top-down report by category, by source file and by function (bench/profile-batch.ts writes them).
 *
 * `node dist-bench/bench/cpu-profile.js <file.cpuprofile> <out-prefix> [messages] [fromUs toUs] [cpuMs]`: the same for
 * any profile (a window in the profile's own clock, µs; `cpuMs`: the thread's CPU time over it, to scale to).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface CallFrame {
  functionName: string;
  url: string;
  /** 0-based, of the script as it ran (compiled JavaScript). */
  lineNumber: number;
  columnNumber: number;
}

/** A frame as reported: its function, its file (a TypeScript source where the compiled file has a source map) and line. */
interface Frame {
  key: string;
  name: string;
  file: string;
  /** What the frame itself is: special V8 entries, Node internals, builtins, a library, redeliver's code. */
  category: string;
  /** Node internals and V8 builtins: charged to their caller's category in the main table. */
  charged: boolean;
}

export interface ProfileAnalysis {
  /** Busy (non-idle) sampled time of the thread in the window, µs; idle sampled time apart. */
  busyUs: number;
  idleUs: number;
  samples: number;
  /** Folded stacks, idle left out: `frame;frame;… µs`. */
  folded: Map<string, number>;
  /** By category, self time, the frames of Node and V8 builtins charged to their nearest caller that has one. */
  categories: Map<string, number>;
  /** By redeliver module: total time (the module on the stack at least once, what it called included). */
  modulesTotal: Map<string, number>;
  functions: Map<string, { frame: Frame; self: number; total: number }>;
  files: Map<string, { category: string; self: number; total: number }>;
}

const IDLE = '(idle)';
/** V8's own entries: not functions. */
const SPECIAL = new Set(['(root)', '(program)', IDLE, '(garbage collector)']);

/** The profile's samples between `fromUs` and `toUs` (its own clock), each weighed by the time until the next sample. */
export function analyseProfile(profile: CpuProfile, fromUs = -Infinity, toUs = Infinity): ProfileAnalysis {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const frames = new Map<number, Frame>();
  const resolver = new FrameResolver();
  const frameOf = (id: number) => {
    if (!frames.has(id)) frames.set(id, resolver.frame(byId.get(id)!.callFrame));
    return frames.get(id)!;
  };
  // self time per node in the window
  const self = new Map<number, number>();
  let t = profile.startTime;
  const times = profile.timeDeltas.map((d) => (t += d));
  let samples = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    if (times[i]! < fromUs || times[i]! > toUs) continue;
    const next = i + 1 < times.length ? times[i + 1]! : profile.endTime;
    self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + Math.max(0, next - times[i]!));
    samples++;
  }
  const analysis: ProfileAnalysis = {
    busyUs: 0,
    idleUs: 0,
    samples,
    folded: new Map(),
    categories: new Map(),
    modulesTotal: new Map(),
    functions: new Map(),
    files: new Map(),
  };
  const add = <K>(map: Map<K, number>, key: K, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  for (const [id, us] of self) {
    const stack: Frame[] = [];
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) stack.unshift(frameOf(n));
    const leaf = stack.at(-1)!;
    if (leaf.name === IDLE) {
      analysis.idleUs += us;
      continue;
    }
    analysis.busyUs += us;
    const shown = stack.filter((f) => f.name !== '(root)');
    add(analysis.folded, shown.map((f) => f.key.replace(/;/g, ',')).join(';'), us);
    // the leaf's category, or its nearest caller's when the leaf is Node's or a builtin
    const owner = [...stack].reverse().find((f) => !f.charged && f.name !== '(root)') ?? leaf;
    add(analysis.categories, owner.charged ? leaf.category : owner.category, us);
    for (const module of new Set(stack.filter((f) => f.category.startsWith('redeliver')).map((f) => f.category)))
      add(analysis.modulesTotal, module, us);
    const fn = analysis.functions.get(leaf.key) ?? { frame: leaf, self: 0, total: 0 };
    analysis.functions.set(leaf.key, { ...fn, self: fn.self + us });
    const file = analysis.files.get(leaf.file) ?? { category: leaf.category, self: 0, total: 0 };
    analysis.files.set(leaf.file, { ...file, self: file.self + us });
    for (const f of new Set(shown)) {
      const entry = analysis.functions.get(f.key) ?? { frame: f, self: 0, total: 0 };
      entry.total += us;
      analysis.functions.set(f.key, entry);
    }
    for (const f of new Set(shown.map((s) => s.file))) {
      const entry = analysis.files.get(f) ?? { category: shown.find((s) => s.file === f)!.category, self: 0, total: 0 };
      entry.total += us;
      analysis.files.set(f, entry);
    }
  }
  return analysis;
}

/** Frames by call frame: TypeScript file and line through the compiled file's source map, and the frame's category. */
class FrameResolver {
  private readonly maps = new Map<string, SourceMap | null>();

  frame(cf: CallFrame): Frame {
    const name = cf.functionName || '(anonymous)';
    if (!cf.url) {
      const special = SPECIAL.has(name);
      return {
        key: name,
        name,
        file: special ? name : '(V8 builtin)',
        category: special ? specialCategory(name) : 'V8 builtins',
        charged: !special,
      };
    }
    // WebAssembly (on the worker's main thread, undici's HTTP parser, llhttp): charged to its caller
    if (cf.url.startsWith('wasm://')) return { key: `${name} wasm`, name, file: 'WebAssembly', category: 'WebAssembly', charged: true };
    // the workflow thread's sandbox: the SDK's workflow runtime and redeliver's workflows, bundled
    if (/workflow-bundle-[0-9a-f]+\.js$/.test(cf.url) || cf.url.startsWith('evalmachine')) {
      const file = cf.url.startsWith('evalmachine') ? cf.url : 'workflow-bundle.js';
      const category = /payload|^(en|de)code/i.test(name)
        ? 'workflow sandbox: payload conversion (JSON)'
        : 'workflow sandbox: runtime, workflows';
      return { key: `${name} ${file}:${cf.lineNumber + 1}`, name, file, category, charged: false };
    }
    if (cf.url.startsWith('node:')) {
      const file = cf.url;
      return { key: `${name} ${file}:${cf.lineNumber + 1}`, name, file, category: nodeCategory(file), charged: true };
    }
    const local = cf.url.startsWith('file:') ? fileURLToPath(cf.url) : cf.url;
    const { file, line } = this.original(local, cf.lineNumber, cf.columnNumber);
    return { key: `${name} ${file}:${line}`, name, file, category: categoryOf(file), charged: false };
  }

  /** The TypeScript source and line of a compiled redeliver or bench file; a library's path from its package. */
  private original(file: string, line: number, column: number): { file: string; line: number } {
    const lib = file.lastIndexOf('/node_modules/');
    if (lib >= 0) return { file: file.slice(lib + 1), line: line + 1 };
    const built = file.match(/\/dist-bench\/(.*)$/);
    if (!built) return { file, line: line + 1 };
    const map = this.mapOf(file);
    const entry = map?.findEntry(line, column) as { originalSource?: string; originalLine?: number } | undefined;
    if (entry?.originalSource !== undefined && entry.originalLine !== undefined) {
      const source = entry.originalSource.startsWith('file:') ? fileURLToPath(entry.originalSource) : entry.originalSource;
      const rel = source.match(/(?:^|\/)((?:src|bench)\/.*)$/)?.[1] ?? source;
      return { file: rel, line: entry.originalLine + 1 };
    }
    return { file: built[1]!, line: line + 1 };
  }

  private mapOf(file: string): SourceMap | null {
    if (!this.maps.has(file)) {
      const mapFile = `${file}.map`;
      this.maps.set(file, existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8'))) : null);
    }
    return this.maps.get(file)!;
  }
}

function specialCategory(name: string): string {
  if (name === '(garbage collector)') return 'GC (on this thread)';
  if (name === '(program)') return 'V8 and native, unattributed ((program))';
  if (name === IDLE) return 'idle';
  return 'other';
}

/** Node's own modules, when no caller of theirs has a category (an event loop callback at the bottom of the stack). */
function nodeCategory(url: string): string {
  if (/streams|stream_base|net|_http|dns|tcp|pipe|socket/.test(url)) return 'Node: sockets, streams';
  if (/timers/.test(url)) return 'Node: timers';
  if (/task_queues|async_hooks|promise/.test(url)) return 'Node: ticks, promises';
  if (/event_target|abort_controller|events/.test(url)) return 'Node: events, AbortSignal';
  if (/worker|child_process|process\//.test(url)) return 'Node: IPC, threads';
  return 'Node: other';
}

/** A library's or redeliver's module, by file. */
export function categoryOf(file: string): string {
  const pkg = file.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1];
  if (pkg === 'undici') return 'HTTP POST: undici';
  if (pkg === '@temporalio/worker') return 'Temporal SDK: worker (activity tasks, heartbeats, workflow activations)';
  if (pkg === '@temporalio/common') return 'Temporal SDK: payload and failure conversion';
  if (pkg === '@temporalio/proto' || pkg === 'protobufjs' || pkg === 'long' || pkg === '@protobufjs/utf8' || pkg?.startsWith('@protobufjs'))
    return 'Temporal SDK: protobuf encoding';
  if (pkg === '@temporalio/activity') return 'Temporal SDK: activity context';
  if (pkg === '@temporalio/client' || pkg === '@grpc/grpc-js') return 'Temporal SDK: client, gRPC';
  if (pkg?.startsWith('@temporalio/')) return `Temporal SDK: ${pkg.slice('@temporalio/'.length)}`;
  // the SDK worker's task pipelines are rxjs
  if (pkg === 'rxjs') return 'Temporal SDK: worker (activity tasks, heartbeats, workflow activations)';
  if (pkg) return `library: ${pkg}`;
  if (file.startsWith('bench/')) return 'bench harness';
  const src = file.match(/^src\/(.*)$/)?.[1];
  if (!src) return 'other';
  return `redeliver: ${redeliverModule(src)}`;
}

function redeliverModule(src: string): string {
  const [dir, name = ''] = src.split('/');
  const base = name.replace(/\.(ts|js)$/, '');
  if (dir === 'classify') return 'classification';
  if (dir === 'endpoints' || ['endpoint-reporter', 'breaker'].includes(base)) return 'endpoint health (reporter, breaker, recording)';
  if (
    dir === 'worker-services' &&
    ['admission', 'limits', 'pacer', 'send-lanes', 'ranked-queue', 'control-cache', 'pace-metrics'].includes(base)
  )
    return 'limits, pacer, lanes';
  if (dir === 'transports' && ['signing', 'named-secrets', 'secret-binding'].includes(base)) return 'signing';
  if (dir === 'transports') return 'HTTP transport (sendHttp, deadline, SSRF guard)';
  if (dir === 'activities' && base.startsWith('batch')) return 'batch activity (first attempts, progress, result)';
  if (dir === 'concurrency') return 'batch activity (first attempts, progress, result)';
  if (dir === 'activities' && base === 'deliver') return 'attempt (deliver.ts: request, classify call, listener)';
  if (dir === 'temporal') return 'Temporal adapter (src/temporal)';
  if (dir === 'contract' || dir === 'delivery') return 'contract, delivery';
  return dir!;
}

const ms = (us: number, messages: number) => us / 1000 / messages;

/** The issue's groups of categories (JSON is a V8 builtin: charged to the payload converter, or to redeliver's code that calls it). */
const GROUPS: [RegExp, string][] = [
  [/^HTTP POST|^Node: sockets|^WebAssembly/, 'the HTTP POST (undici, Node sockets and streams)'],
  [/^Temporal SDK|^workflow sandbox/, 'Temporal SDK (activity tasks, heartbeats, activations, payload conversion and JSON, protobuf)'],
  [/^redeliver/, "redeliver's own code (by module below)"],
  [/^GC/, 'GC'],
];

/** The tables of the report (Markdown), in ms per message after scaling the busy sampled time to the thread's CPU time. */
export function reportTables(a: ProfileAnalysis, messages: number, scale: number, topFunctions = 30): string[] {
  const busy = a.busyUs;
  const f3 = (us: number) => (ms(us, messages) * scale).toFixed(4);
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1)}%`;
  const sorted = <K, V>(m: Map<K, V>, by: (v: V) => number) => [...m].sort((x, y) => by(y[1]) - by(x[1]));
  const lines: string[] = [];
  const groups = new Map<string, number>();
  for (const [c, us] of a.categories) {
    const group = GROUPS.find(([re]) => re.test(c))?.[1] ?? 'V8 and Node otherwise (builtins, ticks, timers, events, (program))';
    groups.set(group, (groups.get(group) ?? 0) + us);
  }
  lines.push('### By group (the categories below, summed)', '');
  lines.push("| group | ms / message | share of the thread's busy time |", '|---|---|---|');
  for (const [g, us] of sorted(groups, (v) => v)) lines.push(`| ${g} | ${f3(us)} | ${pct(us)} |`);
  lines.push(
    `| idle (sampled wall time, no CPU; not in the shares) | ${ms(a.idleUs, messages).toFixed(4)} | — |`,
    '',
    '### By category (self time; Node internals and V8 builtins charged to their caller)',
    '',
  );
  lines.push("| category | ms / message | share of the thread's busy time |", '|---|---|---|');
  for (const [c, us] of sorted(a.categories, (v) => v)) lines.push(`| ${c} | ${f3(us)} | ${pct(us)} |`);
  lines.push('', '### redeliver by module (total time: the module on the stack, what it called included)', '');
  lines.push('| module | ms / message | share |', '|---|---|---|');
  for (const [c, us] of sorted(a.modulesTotal, (v) => v)) lines.push(`| ${c.replace(/^redeliver: /, '')} | ${f3(us)} | ${pct(us)} |`);
  lines.push('', `### Top ${topFunctions} functions by self time`, '');
  lines.push(
    '| # | function | file:line | category | self ms / message | self | total ms / message | total |',
    '|---|---|---|---|---|---|---|---|',
  );
  sorted(a.functions, (v) => v.self)
    .filter(([, v]) => v.self > 0)
    .slice(0, topFunctions)
    .forEach(([key, v], i) => {
      const where = key.slice(v.frame.name.length + 1) || v.frame.file;
      lines.push(
        `| ${i + 1} | \`${cell(v.frame.name)}\` | ${cell(where)} | ${v.frame.category} | ${f3(v.self)} | ${pct(v.self)} | ${f3(v.total)} | ${pct(v.total)} |`,
      );
    });
  lines.push('', `### Top ${topFunctions} functions by total time (top-down)`, '');
  lines.push('| # | function | file:line | total ms / message | total | self ms / message |', '|---|---|---|---|---|---|');
  sorted(a.functions, (v) => v.total)
    .filter(([, v]) => !v.frame.name.startsWith('('))
    .slice(0, topFunctions)
    .forEach(([key, v], i) => {
      const where = key.slice(v.frame.name.length + 1) || v.frame.file;
      lines.push(`| ${i + 1} | \`${cell(v.frame.name)}\` | ${cell(where)} | ${f3(v.total)} | ${pct(v.total)} | ${f3(v.self)} |`);
    });
  lines.push('', '### By source file (files with at least 0.5% self or 2% total time)', '');
  lines.push('| file | category | self ms / message | self | total ms / message | total |', '|---|---|---|---|---|---|');
  for (const [file, v] of sorted(a.files, (x) => x.self).filter(([, v]) => v.self >= busy * 0.005 || v.total >= busy * 0.02))
    lines.push(`| ${cell(file)} | ${v.category} | ${f3(v.self)} | ${pct(v.self)} | ${f3(v.total)} | ${pct(v.total)} |`);
  return lines;
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

/**
 * Folded stacks as text, one a line (`frame;frame;… <µs>`), heaviest first; past `maxBytes` the lightest are left out:
 * `share` is the part of the busy time the lines kept hold.
 */
export function foldedText(a: ProfileAnalysis, maxBytes = Infinity): { text: string; share: number } {
  const lines: string[] = [];
  let bytes = 0;
  let kept = 0;
  for (const [stack, us] of [...a.folded].sort((x, y) => y[1] - x[1])) {
    const line = `${stack} ${Math.round(us)}\n`;
    if (bytes + line.length > maxBytes) break;
    lines.push(line);
    bytes += line.length;
    kept += us;
  }
  return { text: lines.join(''), share: a.busyUs ? kept / a.busyUs : 1 };
}

interface FlameNode {
  name: string;
  value: number;
  children: Map<string, FlameNode>;
}

const PALETTE: [RegExp, string][] = [
  [/^HTTP POST/, '#4e79a7'],
  [/^Temporal SDK: protobuf/, '#b07aa1'],
  [/^Temporal SDK: payload/, '#d4a6c8'],
  [/^Temporal SDK/, '#9467bd'],
  [/^redeliver: classification/, '#e15759'],
  [/^redeliver: endpoint health/, '#f28e2b'],
  [/^redeliver: limits/, '#edc948'],
  [/^redeliver: batch/, '#59a14f'],
  [/^redeliver: attempt/, '#8cd17d'],
  [/^redeliver: HTTP transport/, '#76b7b2'],
  [/^redeliver: signing/, '#ff9da7'],
  [/^redeliver/, '#a0cbe8'],
  [/^GC/, '#d62728'],
  [/^Node/, '#bab0ac'],
  [/^V8 builtins/, '#d7d2cc'],
  [/^V8 and native/, '#9c755f'],
  [/^library/, '#86bcb6'],
];

const colourOf = (category: string) => PALETTE.find(([re]) => re.test(category))?.[1] ?? '#cccccc';

/**
 * A flame graph (the root at the bottom, callers below their callees) of the folded stacks, coloured by each frame's
 * category; frames narrower than the SVG's size allows are left out (with their callees), so it stays under `maxBytes`.
 */
export function flameGraphSvg(
  a: ProfileAnalysis,
  title: string,
  subtitle: string,
  messages: number,
  scale: number,
  maxBytes = 950_000,
): string {
  const root: FlameNode = { name: 'all', value: 0, children: new Map() };
  for (const [stack, us] of a.folded) {
    root.value += us;
    let node = root;
    for (const name of stack.split(';')) {
      if (!node.children.has(name)) node.children.set(name, { name, value: 0, children: new Map() });
      node = node.children.get(name)!;
      node.value += us;
    }
  }
  const category = (key: string) => {
    if (key.endsWith(' wasm')) return 'HTTP POST: undici';
    const file = key.match(/ ((?:node:|src\/|bench\/|node_modules\/)\S*?):\d+$/)?.[1];
    if (!file) return key.startsWith('(garbage') ? 'GC' : key.startsWith('(program') ? 'V8 and native' : 'V8 builtins';
    return file.startsWith('node:') ? 'Node' : categoryOf(file);
  };
  for (let minPx = 0.3; ; minPx *= 1.5) {
    const svg = renderFlame(root, title, subtitle, messages, scale, minPx, category);
    if (svg.length <= maxBytes) return svg;
  }
}

function renderFlame(
  root: FlameNode,
  title: string,
  subtitle: string,
  messages: number,
  scale: number,
  minPx: number,
  category: (key: string) => string,
): string {
  const width = 1600;
  const rowH = 16;
  const top = 100;
  const rects: { x: number; depth: number; w: number; node: FlameNode }[] = [];
  let maxDepth = 0;
  const walk = (node: FlameNode, x: number, depth: number) => {
    const w = (node.value / root.value) * (width - 20);
    if (w < minPx) return;
    rects.push({ x, depth, w, node });
    maxDepth = Math.max(maxDepth, depth);
    let cx = x;
    for (const child of [...node.children.values()].sort((p, q) => (p.name < q.name ? -1 : 1))) {
      walk(child, cx, depth + 1);
      cx += (child.value / root.value) * (width - 20);
    }
  };
  walk(root, 10, 0);
  const height = top + (maxDepth + 1) * rowH + 40;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans Mono, Menlo, monospace" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="22" font-size="16" font-weight="bold" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">${esc(title)}</text>`,
    `<text x="10" y="40" font-size="12" fill="#444" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">${esc(subtitle)}</text>`,
    `<text x="10" y="56" font-size="11" fill="#666" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">${esc(`Root at the bottom; width: share of the main thread's busy samples. Hover for ms per message. Frames under ${minPx.toFixed(2)} px left out.`)}</text>`,
  );
  let lx = 10;
  let ly = 66;
  for (const [re, colour] of PALETTE) {
    const label = re.source.replace(/^\^/, '').replace(/\\/g, '');
    if (lx + 20 + label.length * 6.2 > width) [lx, ly] = [10, ly + 14];
    out.push(
      `<rect x="${lx}" y="${ly}" width="10" height="10" fill="${colour}"/><text x="${lx + 13}" y="${ly + 9}" font-size="10">${esc(label)}</text>`,
    );
    lx += 20 + label.length * 6.2;
  }
  for (const { x, depth, w, node } of rects) {
    const y = height - 40 - (depth + 1) * rowH;
    const share = (100 * node.value) / root.value;
    const label = depth === 0 ? 'all (busy main thread)' : node.name;
    const tip = `${label} — ${((node.value / 1000 / messages) * scale).toFixed(4)} ms/message, ${share.toFixed(2)}%`;
    const colour = depth === 0 ? '#eeeeee' : colourOf(category(node.name));
    const chars = Math.floor((w - 4) / 6.6);
    const text = chars >= 3 ? (label.length > chars ? `${label.slice(0, chars - 1)}…` : label) : '';
    out.push(
      `<g><title>${esc(tip)}</title><rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${rowH - 1}" fill="${colour}"/>` +
        (text ? `<text x="${(x + 2).toFixed(1)}" y="${y + 11}">${esc(text)}</text>` : '') +
        '</g>',
    );
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

if (require.main === module) {
  const [file, prefix, messagesArg = '1', fromArg, toArg, cpuArg] = process.argv.slice(2);
  if (!file || !prefix) throw new Error('usage: cpu-profile <file.cpuprofile> <out-prefix> [messages] [fromUs toUs] [cpuMs]');
  const messages = Number(messagesArg);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const a = analyseProfile(profile, fromArg ? Number(fromArg) : -Infinity, toArg ? Number(toArg) : Infinity);
  const scale = cpuArg ? Number(cpuArg) / (a.busyUs / 1000) : 1;
  writeFileSync(`${prefix}.folded`, foldedText(a).text);
  writeFileSync(`${prefix}.svg`, flameGraphSvg(a, path.basename(file), `${messages} messages`, messages, scale));
  writeFileSync(`${prefix}.md`, `${reportTables(a, messages, scale).join('\n')}\n`);
}
