package reflabeler

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"

	"github.com/lexview/lexview/appview/internal/testing/testproc"
)

// exitPortTaken is labeler.mjs's exit status when its port is taken
// (EX_TEMPFAIL): the caller tries another.
const exitPortTaken = 75

// errPortTaken is what startProcess returns for exitPortTaken.
var errPortTaken = errors.New("its port is taken by another process")

// process is one run of scripts/labeler/labeler.mjs.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *testproc.TailBuffer
	exited chan struct{} // closed once the process is gone; then waitErr is set
	// waitErr is cmd.Wait's result, readable once exited is closed.
	waitErr error

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	stopped bool
}

// response is an answer line of labeler.mjs.
type response struct {
	ID    int64      `json:"id"`
	Label *wireLabel `json:"label"`
	Error string     `json:"error"`
}

// wireLabel is a label as labeler.mjs takes and answers it.
type wireLabel struct {
	ID  int64  `json:"id,omitempty"`
	Src string `json:"src,omitempty"`
	URI string `json:"uri"`
	CID string `json:"cid,omitempty"`
	Val string `json:"val"`
	Neg bool   `json:"neg,omitempty"`
	Cts string `json:"cts,omitempty"`
	Exp string `json:"exp,omitempty"`
}

// runConfig is what a run of labeler.mjs needs.
type runConfig struct {
	node, script, root string // node binary, labeler.mjs, working directory
	pkgDir             string // APPVIEW_LABELER_DIR
	did                string
	signingKey         *atcrypto.PrivateKeyK256
	port               int
	db                 string // SQLite file
	tmp                string // TMPDIR for node
}

// startProcess runs labeler.mjs and waits until it listens; it answers the
// URL it listens on. A taken port is errPortTaken.
func startProcess(c runConfig, timeout time.Duration) (*process, string, error) {
	release, err := testproc.AcquireStartSlot(context.Background())
	if err != nil {
		return nil, "", err
	}
	defer release() // once up (or failed), another start may run
	cmd := exec.Command(c.node, c.script)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(),
		DirEnv+"="+c.pkgDir,
		"LABELER_DID="+c.did,
		"LABELER_SIGNING_KEY="+hex.EncodeToString(c.signingKey.Bytes()),
		"LABELER_PORT="+strconv.Itoa(c.port),
		"LABELER_DB="+c.db,
		"TMPDIR="+c.tmp,
	)
	p := &process{
		cmd:     cmd,
		stderr:  &testproc.TailBuffer{Max: 64 << 10},
		exited:  make(chan struct{}),
		pending: map[int64]chan response{},
	}
	cmd.Stderr = p.stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start node: %w", err)
	}
	ready := make(chan string, 1)
	go p.read(stdout, ready)

	select {
	case url := <-ready:
		return p, url, nil
	case <-p.exited:
		var ee *exec.ExitError
		if errors.As(p.waitErr, &ee) && ee.ExitCode() == exitPortTaken {
			return nil, "", errPortTaken
		}
		return nil, "", fmt.Errorf("labeler.mjs exited before it was ready (%v); its output:\n%s", p.waitErr, p.stderr)
	case <-time.After(timeout):
		p.stop()
		return nil, "", fmt.Errorf("labeler.mjs not ready after %v; its output:\n%s", timeout, p.stderr)
	}
}

// read dispatches the stdout lines of labeler.mjs until it ends, then reaps
// the process and fails the requests still waiting.
func (p *process) read(stdout io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var r struct {
			Ready string `json:"ready"`
			response
		}
		if err := json.Unmarshal(line, &r); err != nil {
			fmt.Fprintf(p.stderr, "unexpected stdout: %s\n", line)
			continue
		}
		if r.Ready != "" {
			select {
			case ready <- r.Ready:
			default:
			}
			continue
		}
		p.mu.Lock()
		ch := p.pending[r.ID]
		delete(p.pending, r.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- r.response
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	p.waitErr = p.cmd.Wait()
	p.mu.Lock()
	p.stopped = true
	for id, ch := range p.pending {
		ch <- response{ID: id, Error: fmt.Sprintf("labeler.mjs exited (%v)", p.waitErr)}
		delete(p.pending, id)
	}
	p.mu.Unlock()
	close(p.exited)
}

// create asks labeler.mjs to create (sign, store, broadcast) a label.
func (p *process) create(l wireLabel, timeout time.Duration) (wireLabel, error) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return wireLabel{}, errors.New("the labeler is stopped")
	}
	p.nextID++
	id := p.nextID
	ch := make(chan response, 1)
	p.pending[id] = ch
	line, err := json.Marshal(map[string]any{"id": id, "op": "create", "label": l})
	if err == nil {
		_, err = p.stdin.Write(append(line, '\n'))
	}
	if err != nil {
		delete(p.pending, id)
		p.mu.Unlock()
		return wireLabel{}, fmt.Errorf("send request: %w", err)
	}
	p.mu.Unlock()

	select {
	case r := <-ch:
		if r.Error != "" {
			return wireLabel{}, errors.New(r.Error)
		}
		if r.Label == nil {
			return wireLabel{}, errors.New("answer without a label")
		}
		return *r.Label, nil
	case <-time.After(timeout):
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return wireLabel{}, fmt.Errorf("no answer after %v", timeout)
	}
}

// stop ends the process: closing stdin asks for a clean shutdown, then
// SIGTERM, then SIGKILL. Idempotent.
func (p *process) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
		return
	case <-time.After(10 * time.Second):
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(5 * time.Second):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}
