package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lexview/lexview/appview"
)

// service is one running instance of Lexview under measurement.
type service interface {
	// pid is the process whose CPU and memory are measured.
	pid() int
	metricsURL() string
	// baseURL is where the HTTP surface is served (the admin API is under
	// /admin/).
	baseURL() string
	stop() error
}

// serviceConfig is what an instance is started with.
type serviceConfig struct {
	dbURL, jetstreamURL, workDir string
	// plcURL is the PLC directory; "" means an unreachable one (nothing
	// is resolved while only live ingestion is measured).
	plcURL string
	// allowPrivateNetworks lets the service fetch from PDSes on loopback
	// (the backfill phase's stand-ins).
	allowPrivateNetworks bool
}

// plc is the PLC directory the instance is given.
func (c serviceConfig) plc() string {
	if c.plcURL == "" {
		return "http://127.0.0.1:1"
	}
	return c.plcURL
}

// buildBinary compiles ./cmd/appview into dir.
func buildBinary(dir string) (string, error) {
	bin := filepath.Join(dir, "appview")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/appview")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/appview: %v\n%s", err, out)
	}
	return bin, nil
}

// freeAddr returns a currently free 127.0.0.1 TCP address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// adminDID is the super user the benchmark bootstraps to call the admin API.
const adminDID = "did:plc:benchadmin000000000000000"

// bootstrapAdmin runs `appview admin bootstrap` on the database and returns
// the admin API key it prints.
func bootstrapAdmin(ctx context.Context, bin, dbURL, workDir string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "admin", "bootstrap", "--did", adminDID)
	cmd.Dir = workDir // no stray .env is read
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "TOKEN_ENCRYPTION_KEY="+tokenKey, "LOG_LEVEL=warn")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("appview admin bootstrap: %w\n%s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	key := strings.TrimSpace(stdout.String())
	if key == "" {
		return "", errors.New("appview admin bootstrap printed no key")
	}
	return key, nil
}

// sessionSecret keeps the service from warning about a missing secret.
const sessionSecret = "lexview-benchingest-session-secret-0123456789"

// tokenKey seals secrets at rest (required with PostgreSQL): random per run.
var tokenKey = func() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}()

// child is `appview serve` in its own process.
type child struct {
	cmd     *exec.Cmd
	metrics string
	base    string
	logPath string
	done    chan error
}

func startChild(bin string, cfg serviceConfig) (*child, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(httpAddr)
	logPath := filepath.Join(cfg.workDir, "appview.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Dir = cfg.workDir // no stray .env is read
	cmd.Env = append(os.Environ(), "DATABASE_URL="+cfg.dbURL, "JETSTREAM_URL="+cfg.jetstreamURL,
		"HOST=127.0.0.1", "PORT="+port, "METRICS_ADDR="+addr, "LOG_LEVEL=warn", "PLC_URL="+cfg.plc(),
		"ALLOW_PRIVATE_NETWORKS="+strconv.FormatBool(cfg.allowPrivateNetworks),
		"SESSION_SECRET="+sessionSecret, "TOKEN_ENCRYPTION_KEY="+tokenKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, metrics: "http://" + addr + "/metrics", base: "http://" + httpAddr, logPath: logPath, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c, nil
}

func (c *child) pid() int           { return c.cmd.Process.Pid }
func (c *child) metricsURL() string { return c.metrics }
func (c *child) baseURL() string    { return c.base }

// stop sends SIGTERM and waits for a graceful exit (SIGKILL after 30s).
func (c *child) stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		return err
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return errors.New("appview did not stop within 30s after SIGTERM; killed")
	}
}

// exited reports whether the child ended early (and how).
func (c *child) exited() (bool, error) {
	select {
	case err := <-c.done:
		c.done <- err
		return true, err
	default:
		return false, nil
	}
}

// logTail returns the last lines the service logged.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// inProcess is the App running inside the benchmark (for CPU profiles).
type inProcess struct {
	app     *appview.App
	srv     *http.Server
	metrics string
	base    string
}

func startInProcess(cfg serviceConfig) (*inProcess, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	app, err := appview.New(appview.Config{
		DatabaseURL: cfg.dbURL,
		Ingest:      appview.IngestConfig{JetstreamURL: cfg.jetstreamURL},
		Metrics:     appview.MetricsConfig{Addr: addr},
		Host:        "127.0.0.1",
		Port:        ln.Addr().(*net.TCPAddr).Port,
		Network:     appview.NetworkConfig{PLCURL: cfg.plc(), AllowPrivateNetworks: cfg.allowPrivateNetworks},
		Security:    appview.SecurityConfig{SessionSecret: sessionSecret, TokenEncryptionKey: tokenKey},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	if err := app.Start(context.Background()); err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: app.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed once stopped
	return &inProcess{app: app, srv: srv, metrics: "http://" + addr + "/metrics", base: "http://" + ln.Addr().String()}, nil
}

func (p *inProcess) pid() int           { return os.Getpid() }
func (p *inProcess) metricsURL() string { return p.metrics }
func (p *inProcess) baseURL() string    { return p.base }
func (p *inProcess) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(p.srv.Shutdown(ctx), p.app.Shutdown(ctx))
}

// procStats is a reading of a process's CPU time and memory.
type procStats struct {
	cpu      time.Duration // user + system
	rss, hwm int64         // bytes: current and peak resident set
	// anon is the anonymous resident memory (RssAnon: heap, stacks and
	// other private allocations), without the file pages a process maps
	// (SQLite's memory-mapped database), which VmRSS counts.
	anon int64
	// written is what the process wrote through system calls (wchar of
	// /proc/PID/io: SQLite's WAL and checkpoints, logs; 0 if unreadable).
	written int64
}

var clockTicks = func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
}()

func readProc(pid int) (procStats, error) {
	var st procStats
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return st, errors.New("unexpected /proc/PID/stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return st, errors.New("short /proc/PID/stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	st.cpu = time.Duration(ut+stt) * time.Second / time.Duration(clockTicks)
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(io), "\n") {
			if v, ok := strings.CutPrefix(line, "wchar: "); ok {
				st.written, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	defer status.Close()
	b, _ := io.ReadAll(status)
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM" && k != "RssAnon") {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			st.rss = kb << 10
		case "VmHWM":
			st.hwm = kb << 10
		default:
			st.anon = kb << 10
		}
	}
	return st, nil
}

// machineBusy is the CPU time all processes used so far (/proc/stat:
// everything but idle and iowait), to tell how busy the rest of the
// machine was during a phase.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / time.Duration(clockTicks)
}

// treeCPU is the CPU time of a process and its children: its own, that of
// its exited children (cutime, cstime) and that of the live ones. 0 when
// pid is 0 or gone.
func treeCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	fields := func(p string) []string {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			return nil
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return nil
		}
		return strings.Fields(string(b[i+1:])) // f[1] is the ppid, f[11..14] utime stime cutime cstime
	}
	sum := func(f []string, from, to int) (ticks int64) {
		for i := from; i <= to && i < len(f); i++ {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
		return ticks
	}
	self := strconv.Itoa(pid)
	ticks := sum(fields(self), 11, 14)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		if f := fields(e.Name()); len(f) > 12 && f[1] == self {
			ticks += sum(f, 11, 12)
		}
	}
	return time.Duration(ticks) * time.Second / time.Duration(clockTicks)
}
