package refrelay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lexview/lexview/appview/internal/testing/testproc"
)

// errPortTaken is what startProcess returns when the relay could not
// listen on its ports: the caller tries others.
var errPortTaken = errors.New("its port is taken by another process")

// runConfig is what a run of the relay needs.
type runConfig struct {
	bin           string // the relay binary
	plcURL        string // --plc-host
	db            string // SQLite file
	persistDir    string // --persist-dir: the event log it replays from
	adminPassword string
	port, metrics int // API and metrics ports on 127.0.0.1
}

// process is one run of the relay binary.
type process struct {
	cmd    *exec.Cmd
	url    string
	output *testproc.TailBuffer // its log lines (stdout) and stderr
	exited chan struct{}        // closed once the process is gone; then waitErr is set
	// waitErr is cmd.Wait's result, readable once exited is closed.
	waitErr error

	mu        sync.Mutex
	connected map[string]bool // hosts whose subscribeRepos it dialled
	changed   chan struct{}   // closed and replaced when connected changes
	stopOnce  sync.Once
}

// logLine is the part of the relay's JSON log lines (log/slog) read here.
type logLine struct {
	Msg  string `json:"msg"`
	Host string `json:"host"`
	Code int    `json:"code"`
	URI  string `json:"uri"` // of its HTTP access log lines
}

// startProcess runs the relay and waits until its API answers; it answers
// the process, listening on http://127.0.0.1:<c.port>. A taken port is
// errPortTaken.
func startProcess(c runConfig, timeout time.Duration) (*process, error) {
	release, err := testproc.AcquireStartSlot(context.Background())
	if err != nil {
		return nil, err
	}
	defer release() // once up (or failed), another start may run
	cmd := exec.Command(c.bin,
		"--plc-host", c.plcURL,
		// Debug: its subscription to a host is logged once dialled.
		"--log-level", "debug",
		"serve",
		"--db-url", "sqlite://"+c.db,
		"--bind", fmt.Sprintf("127.0.0.1:%d", c.port),
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", c.metrics),
		"--persist-dir", c.persistDir,
		"--admin-password", c.adminPassword,
	)
	// Its flags read RELAY_* and other variables too: only the basics pass.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + filepath.Dir(c.db)}
	p := &process{
		cmd:       cmd,
		url:       fmt.Sprintf("http://127.0.0.1:%d", c.port),
		output:    &testproc.TailBuffer{Max: 256 << 10},
		exited:    make(chan struct{}),
		connected: map[string]bool{},
		changed:   make(chan struct{}),
	}
	cmd.Stderr = p.output
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.bin, err)
	}
	go p.read(stdout)

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if p.healthy(ctx) {
			return p, nil
		}
		select {
		case <-p.exited:
			if strings.Contains(p.output.String(), "address already in use") {
				return nil, errPortTaken
			}
			return nil, fmt.Errorf("the relay exited before it was ready (%v); its output:\n%s", p.waitErr, p.output)
		case <-ctx.Done():
			p.stop()
			return nil, fmt.Errorf("the relay is not ready after %v; its output:\n%s", timeout, p.output)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// healthy reports whether GET /xrpc/_health answers 200.
func (p *process) healthy(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/xrpc/_health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// read keeps the relay's log lines and notes its subscriptions until it
// ends, then reaps the process.
func (p *process) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var l logLine
		if json.Unmarshal(line, &l) != nil {
			fmt.Fprintf(p.output, "%s\n", line)
			continue
		}
		// The harness's own polling would crowd out the rest.
		if strings.HasPrefix(l.URI, "/admin/") || l.URI == "/xrpc/_health" {
			continue
		}
		fmt.Fprintf(p.output, "%s\n", line)
		// Logged by its slurper once the WebSocket handshake with a host
		// succeeded (and before it reads the first frame).
		if l.Msg == "event subscription response" && l.Code == http.StatusSwitchingProtocols && l.Host != "" {
			p.mu.Lock()
			p.connected[l.Host] = true
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

// waitConnected waits until the relay has dialled host's firehose.
func (p *process) waitConnected(host string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		ok, changed := p.connected[host], p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-p.exited:
			return fmt.Errorf("the relay exited (%v) before it connected to %s", p.waitErr, host)
		case <-deadline:
			return fmt.Errorf("the relay did not connect to %s within %v", host, timeout)
		}
	}
}

// stop ends the process: SIGTERM (the relay then stores its hosts'
// cursors and closes its event log), then SIGKILL. Idempotent.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			return
		case <-time.After(15 * time.Second):
		}
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}

// freePort is a TCP port free on 127.0.0.1 right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
