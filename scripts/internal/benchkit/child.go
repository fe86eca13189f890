package benchkit

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"
)

// HandlerFactory builds a server's handler over the database at dbURL;
// the returned function releases it.
type HandlerFactory func(ctx context.Context, dbURL string) (http.Handler, func(), error)

// ServeChild is the body of a benchmark's serve-* subcommands: it builds
// the handler over the database its -db flag names, serves it on
// 127.0.0.1:0, calls check with the base URL (a sample request the server
// must answer), prints "READY <base URL>", then obeys commands on stdin
// (start-profile PATH, goroutines PATH, stop-profile) until EOF. It
// returns the process's exit code.
func ServeChild(name string, args []string, factory HandlerFactory, check func(base string) error) int {
	log.SetFlags(0)
	log.SetPrefix(fmt.Sprintf("%s[%d]: ", name, os.Getpid()))
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dbURL := fs.String("db", "", "database URL")
	_ = fs.Parse(args)
	ctx := context.Background()

	h, release, err := factory(ctx, *dbURL)
	if err != nil {
		log.Print(err)
		return 1
	}
	defer release()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Print(err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	base := "http://" + ln.Addr().String()
	if err := check(base); err != nil {
		log.Printf("sample request: %v", err)
		return 1
	}
	fmt.Println("READY " + base)

	sc := bufio.NewScanner(os.Stdin)
	var prof *os.File
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "start-profile":
			if prof, err = os.Create(arg); err == nil {
				err = pprof.StartCPUProfile(prof)
			}
		case "goroutines":
			var f *os.File
			if f, err = os.Create(arg); err == nil {
				err = errors.Join(pprof.Lookup("goroutine").WriteTo(f, 1), f.Close())
			}
		case "stop-profile":
			pprof.StopCPUProfile()
			if prof != nil {
				err = prof.Close()
			}
		default:
			err = fmt.Errorf("unknown command %q", cmd)
		}
		if err != nil {
			fmt.Println("ERR " + err.Error())
		} else {
			fmt.Println("OK")
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}

// Child is a server process: this binary re-executed with a serve-*
// subcommand.
type Child struct {
	URL   string // base URL, http://127.0.0.1:PORT
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	done  chan error
}

// StartChild runs this binary with subcommand sub and waits for READY.
func StartChild(sub string, args ...string) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{sub}, args...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout), done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		if c.out.Scan() {
			ready <- c.out.Text()
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		if u, found := strings.CutPrefix(line, "READY "); ok && found {
			c.URL = u
			go func() { c.done <- cmd.Wait() }()
			return c, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s did not start (first output %q)", sub, line)
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s did not start within 2 minutes", sub)
	}
}

// Command sends a line to the child and waits for its OK.
func (c *Child) Command(line string) error {
	if _, err := fmt.Fprintln(c.stdin, line); err != nil {
		return err
	}
	if !c.out.Scan() {
		return fmt.Errorf("child exited during %q", line)
	}
	if reply := c.out.Text(); reply != "OK" {
		return fmt.Errorf("%s: %s", line, reply)
	}
	return nil
}

// Stop closes the child's stdin, which makes it shut down (killed after
// 15 s).
func (c *Child) Stop() {
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
