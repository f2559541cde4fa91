import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { BlockList, isIP, type Socket } from 'node:net';
import { RedeliverError, recognisedAcrossCopies } from '../errors';

/**
 * The SSRF guard: no attempt may reach an address outside the public internet unless an allow-list opens
 * its range. Addresses are checked where the connection is made — the resolved address of every
 * connection, IP literals included — so a name that resolves to 127.0.0.1, or that changes its answer
 * between a check and the connect (DNS rebinding), is refused all the same.
 */

/** The ranges the guard refuses by default; an allow-list names them or gives CIDRs inside them. */
export type RangeName = 'metadata' | 'this-network' | 'loopback' | 'private' | 'link-local' | 'cgnat' | 'multicast' | 'reserved';

interface RangeDefinition {
  name: RangeName;
  description: string;
  cidrs: readonly string[];
}

/**
 * Checked in this order: the first range that holds an address names it. Cloud metadata endpoints come
 * first because they sit inside other ranges (link-local, CGNAT, unique-local), and opening those for a
 * trusted network must not open the metadata service with them.
 */
export const BLOCKED_RANGES: readonly RangeDefinition[] = [
  {
    name: 'metadata',
    description: 'cloud metadata service',
    cidrs: [
      '169.254.169.254/32', // AWS, GCP, Azure, Oracle, DigitalOcean… instance metadata
      '169.254.170.2/32', // AWS ECS task metadata and credentials
      '169.254.170.23/32', // AWS EKS Pod Identity
      '100.100.100.200/32', // Alibaba Cloud
      '168.63.129.16/32', // Azure WireServer
      '192.0.0.192/32', // Oracle Cloud
      'fd00:ec2::254/128', // AWS instance metadata over IPv6
      'fd00:ec2::23/128', // AWS EKS Pod Identity over IPv6
    ],
  },
  { name: 'this-network', description: '"this network" / unspecified', cidrs: ['0.0.0.0/8', '::/128'] },
  { name: 'loopback', description: 'loopback', cidrs: ['127.0.0.0/8', '::1/128'] },
  {
    name: 'private',
    description: 'private network',
    cidrs: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', '64:ff9b:1::/48'],
  },
  { name: 'link-local', description: 'link-local', cidrs: ['169.254.0.0/16', 'fe80::/10'] },
  { name: 'cgnat', description: 'carrier-grade NAT (shared address space)', cidrs: ['100.64.0.0/10'] },
  { name: 'multicast', description: 'multicast', cidrs: ['224.0.0.0/4', 'ff00::/8'] },
  {
    name: 'reserved',
    description: 'reserved, documentation or benchmarking',
    cidrs: [
      '192.0.0.0/24', // IETF protocol assignments
      '192.0.2.0/24', // TEST-NET-1
      '198.18.0.0/15', // benchmarking
      '198.51.100.0/24', // TEST-NET-2
      '203.0.113.0/24', // TEST-NET-3
      '240.0.0.0/4', // reserved, and the broadcast address 255.255.255.255
      '::/96', // IPv4-compatible IPv6 (deprecated)
      '100::/64', // discard-only
      '2001:db8::/32', // documentation
      'fec0::/10', // site-local (deprecated)
    ],
  },
];

export const RANGE_NAMES: readonly RangeName[] = BLOCKED_RANGES.map((r) => r.name);

/** Why an address may not be reached. */
export interface Refusal {
  range: RangeName;
  description: string;
  /** The IPv4 address an IPv6 address carries (IPv4-mapped, NAT64, 6to4), when it was that one that was refused. */
  embedded?: string;
}

const LISTS = BLOCKED_RANGES.map((r) => ({ ...r, list: blockListOf(r.cidrs) }));

/** The blocked range an address falls in, or undefined for a public address. Pure; IPv4 and IPv6. */
export function rangeOf(raw: string): Refusal | undefined {
  const address = raw.replace(/%.*$/, ''); // an IPv6 zone (fe80::1%eth0) does not change the range
  const family = isIP(address);
  if (family === 0) throw new Error(`not an IP address: ${JSON.stringify(address)}`);
  const own = LISTS.find((r) => r.list.check(address, family === 4 ? 'ipv4' : 'ipv6'));
  if (own) return { range: own.name, description: own.description };
  if (family === 6) {
    const v4 = embeddedIPv4(address);
    const inner = v4 === undefined ? undefined : rangeOf(v4);
    if (inner) return { ...inner, embedded: v4 };
  }
  return undefined;
}

/** Refused when an attempt would connect to a blocked address. */
export class BlockedAddressError extends RedeliverError {
  static {
    recognisedAcrossCopies(this, 'BlockedAddressError');
  }
  static readonly CODE = 'ERR_REDELIVER_BLOCKED_ADDRESS';
  override readonly name = 'BlockedAddressError';
  readonly code = BlockedAddressError.CODE;
  constructor(
    /** The host the target names (a DNS name or an IP literal). */
    readonly host: string,
    readonly address: string,
    readonly refusal: Refusal,
  ) {
    super(`${host === address ? address : `${host} resolves to ${address}`}: ${describeRefusal(refusal)}, which the SSRF guard refuses`);
  }
}

export function describeRefusal(refusal: Refusal): string {
  return `a ${refusal.description} address${refusal.embedded ? ` (IPv4 ${refusal.embedded} inside IPv6)` : ''}`;
}

/**
 * Which blocked addresses attempts may reach anyway. Entries: a range name (`loopback`, `private`,
 * `link-local`, `cgnat`, `multicast`, `metadata`, `this-network`, `reserved`), a CIDR (`10.1.0.0/16`,
 * `fd12:3456::/32`) or one address. A name opens its range but not a more specific range inside it:
 * `link-local` leaves the metadata service closed unless `metadata` is named too.
 */
export class AddressGuard {
  private constructor(
    private readonly names: ReadonlySet<RangeName>,
    private readonly cidrs: BlockList,
    /** The entries as given, for messages. */
    readonly entries: readonly string[],
  ) {}

  /** Refuses everything outside the public internet. */
  static readonly DEFAULT = new AddressGuard(new Set(), new BlockList(), []);

  /**
   * Parses an allow-list: a comma- or space-separated string, or a list of entries. Throws an error that
   * names `source` (the variable or option it came from) and every bad entry.
   */
  static parse(spec: string | readonly string[] | undefined, source = 'allow-list'): AddressGuard {
    const entries = (typeof spec === 'string' ? spec.split(/[\s,]+/) : [...(spec ?? [])]).map((e) => e.trim()).filter(Boolean);
    const names = new Set<RangeName>();
    const cidrs = new BlockList();
    const bad: string[] = [];
    for (const entry of entries) {
      if ((RANGE_NAMES as readonly string[]).includes(entry)) names.add(entry as RangeName);
      else if (!addCidr(cidrs, entry)) bad.push(JSON.stringify(entry));
    }
    if (bad.length) {
      throw new Error(
        `${source}: ${bad.join(', ')} ${bad.length > 1 ? 'are' : 'is'} not a range name (${RANGE_NAMES.join(', ')}), a CIDR or an IP address`,
      );
    }
    return new AddressGuard(names, cidrs, entries);
  }

  /** Why `address` may not be reached, or undefined when it may. */
  refusal(address: string): Refusal | undefined {
    const refusal = rangeOf(address);
    if (!refusal || this.names.has(refusal.range)) return undefined;
    const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (this.cidrs.check(address, family)) return undefined;
    if (refusal.embedded && this.cidrs.check(refusal.embedded, 'ipv4')) return undefined;
    return refusal;
  }

  /** Throws a BlockedAddressError when `address` may not be reached. */
  check(host: string, address: string): void {
    const refusal = this.refusal(address);
    if (refusal) throw new BlockedAddressError(host, address, refusal);
  }

  /** "loopback, 10.1.0.0/16", or "nothing" */
  describe(): string {
    return this.entries.length ? this.entries.join(', ') : 'nothing';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
/** The shape of `dns.lookup` that `net.connect` calls (with `all: true` when it tries several addresses). */
export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * Wraps a resolver (default `dns.lookup`) so that blocked answers are dropped: the connection goes only to
 * allowed addresses, and fails with a BlockedAddressError when none is left. This is the lookup that
 * `net.connect` uses for the very connection it makes.
 */
export function guardedLookup(guard: AddressGuard, lookup: LookupFunction = dnsLookup as unknown as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    const opts = (typeof options === 'number' ? { family: options } : (options ?? {})) as LookupOptions;
    lookup(hostname, { ...opts, all: true } as LookupAllOptions, (err, answer) => {
      if (err) return callback(err, '');
      const all = Array.isArray(answer) ? answer : [{ address: answer, family: isIP(answer) }];
      const allowed = all.filter((a) => !guard.refusal(a.address));
      if (allowed.length === 0) {
        const first = all[0];
        if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        return callback(new BlockedAddressError(hostname, first.address, guard.refusal(first.address)!) as NodeJS.ErrnoException, '');
      }
      if (opts.all) return callback(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** Checks the peer of a connected socket: the last word, whatever path the address took to get there. */
export function checkPeer(guard: AddressGuard, host: string, socket: Socket): void {
  const peer = socket.remoteAddress;
  if (peer) guard.check(host, peer);
}

function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) if (!addCidr(list, cidr)) throw new Error(`bad CIDR in the SSRF guard's table: ${cidr}`);
  return list;
}

/** Adds `a.b.c.d/n`, `x::y/n` or a single address; false when it is neither. */
function addCidr(list: BlockList, entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (prefix === undefined) {
    list.addAddress(address, type);
    return true;
  }
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > (family === 4 ? 32 : 128)) return false;
  list.addSubnet(address, Number(prefix), type);
  return true;
}

/** The IPv4 address an IPv6 address carries: IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16). */
function embeddedIPv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  const isPrefix = (prefix: number[]) => prefix.every((b, i) => bytes[i] === b);
  const v4 = (at: number) => bytes.slice(at, at + 4).join('.');
  if (isPrefix([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff])) return v4(12);
  if (isPrefix([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return v4(12);
  if (isPrefix([0x20, 0x02])) return v4(2);
  return undefined;
}

/** The 16 bytes of an IPv6 address (with `::` and a dotted IPv4 tail expanded). */
function ipv6Bytes(address: string): number[] {
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return all.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}
