package appview_test

import (
	"net"
	"testing"

	"github.com/lexview/lexview/appview"
)

// TestListenBeforeNew: appview.Listen applies New's defaults (the host
// 127.0.0.1; Port -1 picks a free port), so a caller can learn the port
// before New and give it to Config.Port.
func TestListenBeforeNew(t *testing.T) {
	t.Parallel()
	ln, err := appview.Listen(appview.Config{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) || addr.Port == 0 {
		t.Fatalf("listening on %s", addr)
	}
	if _, err := appview.Listen(appview.Config{Host: "127.0.0.1", Port: addr.Port}); err == nil {
		t.Fatal("a second listener on a taken port")
	}
}
