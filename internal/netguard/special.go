package netguard

import (
	"fmt"
	"net/netip"
)

// A row is one entry of an IANA special-purpose address registry, or of
// the address space registries for the blocks the special-purpose ones
// leave out (multicast).
//
// Every row is refused, including the few the registries mark globally
// reachable: those are anycast service addresses answered by the nearest
// server (PCP, TURN, DNS-SD SRP, AMT relays, AS112), which is often on the
// operator's own network, and identifier blocks that are not routed
// (ORCHIDv2, drone entity tags); a public web service has no business
// there. The exception is a row whose addresses carry an IPv4 address
// (embed is set): it is decided by that IPv4 address, classified in turn.
type row struct {
	prefix netip.Prefix
	name   string
	embed  func(netip.Addr) []netip.Addr
}

// special is a row that is refused outright.
func special(prefix, name string) row { return row{prefix: netip.MustParsePrefix(prefix), name: name} }

// embedding is a row decided by the IPv4 addresses its addresses carry.
func embedding(prefix, name string, embed func(netip.Addr) []netip.Addr) row {
	return row{prefix: netip.MustParsePrefix(prefix), name: name, embed: embed}
}

// ipv4Rows follows the IANA IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry/).
var ipv4Rows = []row{
	special("0.0.0.0/8", "this network"),                          // RFC 791 §3.2
	special("0.0.0.0/32", "this host on this network"),            // RFC 1122 §3.2.1.3
	special("10.0.0.0/8", "private-use"),                          // RFC 1918
	special("100.64.0.0/10", "shared address space (CGNAT)"),      // RFC 6598
	special("127.0.0.0/8", "loopback"),                            // RFC 1122 §3.2.1.3
	special("169.254.0.0/16", "link-local"),                       // RFC 3927
	special("172.16.0.0/12", "private-use"),                       // RFC 1918
	special("192.0.0.0/24", "IETF protocol assignments"),          // RFC 6890 §2.1
	special("192.0.0.0/29", "IPv4 service continuity prefix"),     // RFC 7335
	special("192.0.0.8/32", "IPv4 dummy address"),                 // RFC 7600
	special("192.0.0.9/32", "port control protocol anycast"),      // RFC 7723 (registry: globally reachable)
	special("192.0.0.10/32", "TURN anycast"),                      // RFC 8155 (registry: globally reachable)
	special("192.0.0.170/32", "NAT64/DNS64 discovery"),            // RFC 8880, RFC 7050 §2.2
	special("192.0.0.171/32", "NAT64/DNS64 discovery"),            // RFC 8880, RFC 7050 §2.2
	special("192.0.2.0/24", "documentation (TEST-NET-1)"),         // RFC 5737
	special("192.31.196.0/24", "AS112-v4"),                        // RFC 7535 (registry: globally reachable)
	special("192.52.193.0/24", "AMT"),                             // RFC 7450 (registry: globally reachable)
	special("192.88.99.0/24", "deprecated 6to4 relay anycast"),    // RFC 7526
	special("192.88.99.2/32", "6a44 relay anycast"),               // RFC 6751
	special("192.168.0.0/16", "private-use"),                      // RFC 1918
	special("192.175.48.0/24", "direct delegation AS112 service"), // RFC 7534 (registry: globally reachable)
	special("198.18.0.0/15", "benchmarking"),                      // RFC 2544
	special("198.51.100.0/24", "documentation (TEST-NET-2)"),      // RFC 5737
	special("203.0.113.0/24", "documentation (TEST-NET-3)"),       // RFC 5737
	special("224.0.0.0/4", "multicast"),                           // RFC 5771 (IPv4 address space registry)
	special("240.0.0.0/4", "reserved"),                            // RFC 1112 §4
	special("255.255.255.255/32", "limited broadcast"),            // RFC 8190, RFC 919 §7
}

// ipv6Rows follows the IANA IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv6-special-registry/). IPv6
// addresses no row covers must also lie in globalUnicast.
var ipv6Rows = []row{
	special("::1/128", "loopback"),                                           // RFC 4291
	special("::/128", "unspecified"),                                         // RFC 4291
	special("::/96", "IPv4-compatible (deprecated)"),                         // RFC 4291 §2.5.5.1 (not a registry row: reserved ::/8 space)
	embedding("::ffff:0:0/96", "IPv4-mapped", low32),                         // RFC 4291: a socket dials the IPv4 address itself
	embedding("64:ff9b::/96", "NAT64 well-known prefix", low32),              // RFC 6052
	special("64:ff9b:1::/48", "NAT64 local-use prefix"),                      // RFC 8215
	special("100::/64", "discard-only"),                                      // RFC 6666
	special("100:0:0:1::/64", "dummy IPv6 prefix"),                           // RFC 9780
	special("2001::/23", "IETF protocol assignments"),                        // RFC 2928
	embedding("2001::/32", "Teredo", teredo),                                 // RFC 4380, RFC 8190
	special("2001:1::1/128", "port control protocol anycast"),                // RFC 7723 (registry: globally reachable)
	special("2001:1::2/128", "TURN anycast"),                                 // RFC 8155 (registry: globally reachable)
	special("2001:1::3/128", "DNS-SD service registration protocol anycast"), // RFC 9665 (registry: globally reachable)
	special("2001:2::/48", "benchmarking"),                                   // RFC 5180, RFC Errata 1752
	special("2001:3::/32", "AMT"),                                            // RFC 7450 (registry: globally reachable)
	special("2001:4:112::/48", "AS112-v6"),                                   // RFC 7535 (registry: globally reachable)
	special("2001:10::/28", "deprecated ORCHID"),                             // RFC 4843
	special("2001:20::/28", "ORCHIDv2"),                                      // RFC 7343 (registry: globally reachable)
	special("2001:30::/28", "drone remote ID entity tags"),                   // RFC 9374 (registry: globally reachable)
	special("2001:db8::/32", "documentation"),                                // RFC 3849
	embedding("2002::/16", "6to4", sixToFour),                                // RFC 3056
	special("2620:4f:8000::/48", "direct delegation AS112 service"),          // RFC 7534 (registry: globally reachable)
	special("3fff::/20", "documentation"),                                    // RFC 9637
	special("5f00::/16", "segment routing (SRv6) SIDs"),                      // RFC 9602
	special("fc00::/7", "unique-local"),                                      // RFC 4193, RFC 8190
	special("fe80::/10", "link-local unicast"),                               // RFC 4291
	special("ff00::/8", "multicast"),                                         // RFC 4291 §2.7 (IPv6 address space registry)
}

// globalUnicast is the part of the IPv6 space IANA allocates global
// unicast addresses from (RFC 4291 §2.4, IPv6 Address Space Registry);
// the rest is reserved or special.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// low32 is the IPv4 address in the last 32 bits (IPv4-mapped, NAT64).
func low32(a netip.Addr) []netip.Addr {
	b := a.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte(b[12:16]))}
}

// sixToFour is the IPv4 address of a 6to4 prefix 2002:AABB:CCDD::/48.
func sixToFour(a netip.Addr) []netip.Addr {
	b := a.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))}
}

// teredo is the Teredo server's IPv4 address (bits 32-63) and the client's
// (the last 32 bits, inverted): RFC 4380 §4.
func teredo(a netip.Addr) []netip.Addr {
	b := a.As16()
	var client [4]byte
	for i := range client {
		client[i] = ^b[12+i]
	}
	return []netip.Addr{netip.AddrFrom4([4]byte(b[4:8])), netip.AddrFrom4(client)}
}

// lookup returns the most specific row covering a, as the registries
// intend ("unless allowed by a more specific allocation").
func lookup(a netip.Addr) (row, bool) {
	rows := ipv4Rows
	if a.Is6() {
		rows = ipv6Rows
	}
	var best row
	found := false
	for _, rw := range rows {
		if rw.prefix.Contains(a) && (!found || rw.prefix.Bits() > best.prefix.Bits()) {
			best, found = rw, true
		}
	}
	return best, found
}

// classify returns "" when a is globally reachable, or why it is not.
func classify(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.WithZone("")
	rw, ok := lookup(a)
	switch {
	case !ok && a.Is6() && !globalUnicast.Contains(a):
		return "outside the IPv6 global unicast space " + globalUnicast.String()
	case !ok:
		return ""
	case rw.embed == nil:
		return fmt.Sprintf("%s (%s)", rw.name, rw.prefix)
	}
	for _, v4 := range rw.embed(a) {
		if why := classify(v4); why != "" {
			return fmt.Sprintf("%s (%s) carrying %s, %s", rw.name, rw.prefix, v4, why)
		}
	}
	return ""
}

// Public reports whether addr is globally reachable: it is in no row of
// the IANA IPv4 and IPv6 special-purpose address registries (nor
// multicast, nor, for IPv6, outside 2000::/3), or it is an IPv4-mapped,
// NAT64 (64:ff9b::/96), 6to4 or Teredo address whose embedded IPv4
// addresses are all public.
func Public(addr netip.Addr) bool { return classify(addr) == "" }
