package netguard

import (
	"net/netip"
	"testing"
)

// TestClassify checks addresses in every row of both tables, at their
// edges and just outside, and fails if a row has no case.
func TestClassify(t *testing.T) {
	untested := map[netip.Prefix]bool{}
	for _, rw := range append(append([]row(nil), ipv4Rows...), ipv6Rows...) {
		untested[rw.prefix] = true
	}
	for _, c := range []struct {
		addr   string
		row    string // the most specific row, "" for none
		public bool
	}{
		// IPv4 special-purpose registry.
		{"0.1.2.3", "0.0.0.0/8", false},
		{"0.0.0.0", "0.0.0.0/32", false},
		{"10.0.0.0", "10.0.0.0/8", false},
		{"10.255.255.255", "10.0.0.0/8", false},
		{"100.64.0.1", "100.64.0.0/10", false},
		{"100.127.255.255", "100.64.0.0/10", false},
		{"100.128.0.0", "", true},
		{"127.0.0.1", "127.0.0.0/8", false},
		{"127.255.255.254", "127.0.0.0/8", false},
		{"169.254.169.254", "169.254.0.0/16", false},
		{"172.16.0.1", "172.16.0.0/12", false},
		{"172.31.255.255", "172.16.0.0/12", false},
		{"172.32.0.1", "", true},
		{"192.0.0.255", "192.0.0.0/24", false},
		{"192.0.0.1", "192.0.0.0/29", false},
		{"192.0.0.8", "192.0.0.8/32", false},
		{"192.0.0.9", "192.0.0.9/32", false},
		{"192.0.0.10", "192.0.0.10/32", false},
		{"192.0.0.170", "192.0.0.170/32", false},
		{"192.0.0.171", "192.0.0.171/32", false},
		{"192.0.2.1", "192.0.2.0/24", false},
		{"192.31.196.1", "192.31.196.0/24", false},
		{"192.52.193.1", "192.52.193.0/24", false},
		{"192.88.99.1", "192.88.99.0/24", false},
		{"192.88.99.2", "192.88.99.2/32", false},
		{"192.168.1.1", "192.168.0.0/16", false},
		{"192.175.48.1", "192.175.48.0/24", false},
		{"198.18.0.1", "198.18.0.0/15", false},
		{"198.19.255.255", "198.18.0.0/15", false},
		{"198.20.0.0", "", true},
		{"198.51.100.7", "198.51.100.0/24", false},
		{"203.0.113.9", "203.0.113.0/24", false},
		{"224.0.0.1", "224.0.0.0/4", false},
		{"239.255.255.255", "224.0.0.0/4", false},
		{"240.0.0.1", "240.0.0.0/4", false},
		{"255.255.255.254", "240.0.0.0/4", false},
		{"255.255.255.255", "255.255.255.255/32", false},
		{"8.8.8.8", "", true},
		{"1.1.1.1", "", true},
		{"223.255.255.255", "", true},

		// IPv6 special-purpose registry.
		{"::1", "::1/128", false},
		{"::", "::/128", false},
		{"::2", "::/96", false},
		{"::127.0.0.1", "::/96", false},
		{"::8.8.8.8", "::/96", false}, // IPv4-compatible addresses are deprecated, public or not
		{"::ffff:127.0.0.1", "::ffff:0:0/96", false},
		{"::ffff:10.0.0.1", "::ffff:0:0/96", false},
		{"::ffff:8.8.8.8", "::ffff:0:0/96", true},
		{"64:ff9b::127.0.0.1", "64:ff9b::/96", false},
		{"64:ff9b::192.168.0.1", "64:ff9b::/96", false},
		{"64:ff9b::100.64.0.1", "64:ff9b::/96", false},
		{"64:ff9b::8.8.8.8", "64:ff9b::/96", true},
		{"64:ff9b:1::1", "64:ff9b:1::/48", false},
		{"64:ff9b:1::8.8.8.8", "64:ff9b:1::/48", false},
		{"100::1", "100::/64", false},
		{"100:0:0:1::1", "100:0:0:1::/64", false},
		{"2001:1ff::1", "2001::/23", false},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", "2001::/32", true},  // server 65.54.227.120, client 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "2001::/32", false}, // client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::/32", false}, // client 192.0.2.45 (RFC 4380's example)
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", "2001::/32", false},     // server 10.0.0.1
		{"2001:1::1", "2001:1::1/128", false},
		{"2001:1::2", "2001:1::2/128", false},
		{"2001:1::3", "2001:1::3/128", false},
		{"2001:1::4", "2001::/23", false},
		{"2001:2::1", "2001:2::/48", false},
		{"2001:3::1", "2001:3::/32", false},
		{"2001:4:112::1", "2001:4:112::/48", false},
		{"2001:10::1", "2001:10::/28", false},
		{"2001:20::1", "2001:20::/28", false},
		{"2001:30::1", "2001:30::/28", false},
		{"2001:db8::1", "2001:db8::/32", false},
		{"2001:200::1", "", true},
		{"2002:808:808::1", "2002::/16", true},
		{"2002:7f00:1::1", "2002::/16", false},
		{"2002:a9fe:a9fe::1", "2002::/16", false},
		{"2002:c000:201::1", "2002::/16", false},
		{"2620:4f:8000::1", "2620:4f:8000::/48", false},
		{"3fff::1", "3fff::/20", false},
		{"3fff:fff::1", "3fff::/20", false},
		{"3fff:1000::1", "", true},
		{"5f00::1", "5f00::/16", false},
		{"fc00::1", "fc00::/7", false},
		{"fd12:3456::1", "fc00::/7", false},
		{"fe80::1", "fe80::/10", false},
		{"fe80::1%eth0", "fe80::/10", false},
		{"ff02::1", "ff00::/8", false},
		{"fec0::1", "", false}, // deprecated site-local: outside 2000::/3
		{"4000::1", "", false},
		{"2606:4700::1111", "", true},
		{"2a00:1450:4001::1", "", true},
	} {
		a := netip.MustParseAddr(c.addr)
		var want, got netip.Prefix
		if c.row != "" {
			want = netip.MustParsePrefix(c.row)
		}
		if rw, ok := lookup(a.WithZone("")); ok {
			got = rw.prefix
		}
		if got != want {
			t.Errorf("%s: row %v, want %v", c.addr, got, want)
		}
		if got := Public(a); got != c.public {
			t.Errorf("Public(%s) = %v (%s), want %v", c.addr, got, classify(a), c.public)
		}
		delete(untested, want)
	}
	for prefix := range untested {
		t.Errorf("row %s has no case", prefix)
	}
}
