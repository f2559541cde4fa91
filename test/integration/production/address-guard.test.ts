import { AddressGuard, BLOCKED_RANGES, rangeOf, type RangeName } from '../../../src/transports/address-guard';

// The SSRF guard's address classifier, range by range, IPv4 and IPv6 (the connect-time checks are in ssrf.test.ts).

describe('every blocked range', () => {
  test.each<[string, string, RangeName]>([
    ['0.0.0.0/8', '0.0.0.0', 'this-network'],
    ['0.0.0.0/8', '0.255.255.255', 'this-network'],
    ['::/128', '::', 'this-network'],
    ['127.0.0.0/8', '127.0.0.1', 'loopback'],
    ['127.0.0.0/8', '127.255.255.254', 'loopback'],
    ['::1/128', '::1', 'loopback'],
    ['10.0.0.0/8', '10.0.0.1', 'private'],
    ['10.0.0.0/8', '10.255.255.255', 'private'],
    ['172.16.0.0/12', '172.16.0.1', 'private'],
    ['172.16.0.0/12', '172.31.255.255', 'private'],
    ['192.168.0.0/16', '192.168.1.1', 'private'],
    ['fc00::/7 (unique local)', 'fc00::1', 'private'],
    ['fc00::/7 (unique local)', 'fdff:ffff::1', 'private'],
    ['169.254.0.0/16', '169.254.0.1', 'link-local'],
    ['169.254.0.0/16', '169.254.255.255', 'link-local'],
    ['fe80::/10', 'fe80::1', 'link-local'],
    ['fe80::/10 with a zone', 'fe80::1%eth0', 'link-local'],
    ['fe80::/10', 'febf::1', 'link-local'],
    ['100.64.0.0/10 (CGNAT)', '100.64.0.1', 'cgnat'],
    ['100.64.0.0/10 (CGNAT)', '100.127.255.255', 'cgnat'],
    ['224.0.0.0/4', '224.0.0.1', 'multicast'],
    ['224.0.0.0/4', '239.255.255.250', 'multicast'],
    ['ff00::/8', 'ff02::1', 'multicast'],
    ['ff00::/8', 'ff0e::fb', 'multicast'],
    ['AWS/GCP/Azure instance metadata', '169.254.169.254', 'metadata'],
    ['AWS ECS task metadata', '169.254.170.2', 'metadata'],
    ['AWS instance metadata over IPv6', 'fd00:ec2::254', 'metadata'],
    ['Alibaba Cloud metadata', '100.100.100.200', 'metadata'],
    ['Azure WireServer', '168.63.129.16', 'metadata'],
    ['Oracle Cloud metadata', '192.0.0.192', 'metadata'],
    ['192.0.0.0/24', '192.0.0.8', 'reserved'],
    ['TEST-NET-1', '192.0.2.1', 'reserved'],
    ['benchmarking 198.18.0.0/15', '198.19.255.255', 'reserved'],
    ['TEST-NET-2', '198.51.100.7', 'reserved'],
    ['TEST-NET-3', '203.0.113.9', 'reserved'],
    ['240.0.0.0/4', '240.0.0.1', 'reserved'],
    ['broadcast', '255.255.255.255', 'reserved'],
    ['IPv6 documentation', '2001:db8::1', 'reserved'],
    ['IPv6 discard', '100::1', 'reserved'],
    ['IPv4-compatible IPv6', '::10.0.0.1', 'reserved'],
    ['IPv6 site-local (deprecated)', 'fec0::1', 'reserved'],
    ['local-use NAT64', '64:ff9b:1::a00:1', 'private'],
  ])('%s: %s → %s', (_range, address, range) => {
    expect(rangeOf(address)?.range).toBe(range);
    expect(AddressGuard.DEFAULT.refusal(address)?.range).toBe(range);
  });

  test('the table has no range the cases above miss', () => {
    expect(BLOCKED_RANGES.map((r) => r.name)).toEqual([
      'metadata',
      'this-network',
      'loopback',
      'private',
      'link-local',
      'cgnat',
      'multicast',
      'reserved',
    ]);
  });
});

describe('IPv4 inside IPv6 is judged by the IPv4 address', () => {
  test.each<[string, string, RangeName]>([
    ['IPv4-mapped loopback', '::ffff:127.0.0.1', 'loopback'],
    ['IPv4-mapped loopback, hex form', '::ffff:7f00:1', 'loopback'],
    ['IPv4-mapped metadata', '::ffff:169.254.169.254', 'metadata'],
    ['IPv4-mapped private', '::ffff:10.1.2.3', 'private'],
    ['IPv4-mapped CGNAT', '::ffff:100.64.1.1', 'cgnat'],
    ['IPv4-mapped this-network', '::ffff:0.0.0.0', 'this-network'],
    ['NAT64 of loopback', '64:ff9b::127.0.0.1', 'loopback'],
    ['NAT64 of metadata', '64:ff9b::a9fe:a9fe', 'metadata'],
    ['6to4 of a private address', '2002:c0a8:0101::1', 'private'],
  ])('%s: %s → %s', (_what, address, range) => {
    expect(rangeOf(address)?.range).toBe(range);
  });

  test('a public IPv4 address inside IPv6 is public', () => {
    expect(rangeOf('::ffff:93.184.216.34')).toBeUndefined();
    expect(rangeOf('64:ff9b::8.8.8.8')).toBeUndefined();
  });
});

describe('public addresses pass', () => {
  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '169.253.255.255',
    '223.255.255.255',
    '2606:4700::1111',
    '2a00:1450:4001::200e',
    '2001:4860::8888',
  ])('%s', (address) => {
    expect(rangeOf(address)).toBeUndefined();
    expect(AddressGuard.DEFAULT.refusal(address)).toBeUndefined();
  });

  test('a host name is not an address', () => {
    expect(() => rangeOf('localhost')).toThrow('not an IP address');
  });
});

describe('the allow-list', () => {
  test('a range name opens that range, IPv4 and IPv6', () => {
    const guard = AddressGuard.parse('loopback');
    expect(guard.refusal('127.0.0.1')).toBeUndefined();
    expect(guard.refusal('::1')).toBeUndefined();
    expect(guard.refusal('::ffff:127.0.0.1')).toBeUndefined();
    expect(guard.refusal('10.0.0.1')?.range).toBe('private');
  });

  test('opening link-local leaves the metadata service inside it closed, until it is named', () => {
    expect(AddressGuard.parse('link-local').refusal('169.254.1.1')).toBeUndefined();
    expect(AddressGuard.parse('link-local').refusal('169.254.169.254')?.range).toBe('metadata');
    expect(AddressGuard.parse('private').refusal('fd00:ec2::254')?.range).toBe('metadata');
    expect(AddressGuard.parse('link-local, metadata').refusal('169.254.169.254')).toBeUndefined();
  });

  test('a CIDR opens exactly its addresses', () => {
    const guard = AddressGuard.parse(['10.1.0.0/16', 'fd12:3456::/32', '192.168.7.7']);
    expect(guard.refusal('10.1.200.3')).toBeUndefined();
    expect(guard.refusal('10.2.0.1')?.range).toBe('private');
    expect(guard.refusal('fd12:3456::9')).toBeUndefined();
    expect(guard.refusal('fd12:3457::9')?.range).toBe('private');
    expect(guard.refusal('192.168.7.7')).toBeUndefined();
    expect(guard.refusal('192.168.7.8')?.range).toBe('private');
    expect(guard.refusal('::ffff:10.1.0.5')).toBeUndefined();
  });

  test('entries may be separated by commas or spaces; the guard says what it allows', () => {
    expect(AddressGuard.parse(' loopback,  cgnat 10.0.0.0/8 ').describe()).toBe('loopback, cgnat, 10.0.0.0/8');
    expect(AddressGuard.DEFAULT.describe()).toBe('nothing');
    expect(AddressGuard.parse('').describe()).toBe('nothing');
  });

  test('bad entries are refused by name, each of them', () => {
    expect(() => AddressGuard.parse('loopback, localhost, 10.0.0.0/33, 300.1.1.1', 'REDELIVER_ALLOW_ADDRESSES')).toThrow(
      'REDELIVER_ALLOW_ADDRESSES: "localhost", "10.0.0.0/33", "300.1.1.1" are not a range name (metadata, this-network, loopback, private, link-local, cgnat, multicast, reserved), a CIDR or an IP address',
    );
  });
});
