package main

import (
	"bufio"
	"context"
	"encoding/json"
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
	"strconv"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/lexview/lexview/appview"
)

// handlerFactory builds a server's handler over the database at dbURL;
// the returned function releases it.
type handlerFactory func(ctx context.Context, dbURL string) (http.Handler, func(), error)

// newLexviewHandler serves Lexview itself over the prepared database.
func newLexviewHandler(ctx context.Context, dbURL string) (http.Handler, func(), error) {
	s, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	app, err := appview.New(appConfig(s))
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return app, func() { s.Close() }, nil
}

// serveChild is the body of the serve-* subcommands. It serves on
// 127.0.0.1:0, checks a sample response, prints "READY <base URL>", then
// obeys commands on stdin (start-profile PATH, stop-profile) until EOF.
func serveChild(args []string, factory handlerFactory) int {
	log.SetFlags(0)
	log.SetPrefix(fmt.Sprintf("benchquery[%d]: ", os.Getpid()))
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
	if err := checkSample(base + "/xrpc/" + smallQuery + "?limit=" + strconv.Itoa(pageLimit)); err != nil {
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

// checkSample requires a 200 page of pageLimit records with a cursor.
func checkSample(u string) error {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("X-Client-Key", clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	var page struct {
		Records []map[string]any `json:"records"`
		Cursor  string           `json:"cursor"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return fmt.Errorf("decode: %v", err)
	}
	if len(page.Records) != pageLimit || page.Cursor == "" {
		return fmt.Errorf("got %d records, cursor %q; want %d and a cursor", len(page.Records), page.Cursor, pageLimit)
	}
	if uri, _ := page.Records[0]["uri"].(string); !strings.HasPrefix(uri, "at://") {
		return fmt.Errorf("first record has no uri: %v", page.Records[0])
	}
	return nil
}

// child is a server process.
type child struct {
	cmd   *exec.Cmd
	url   string
	stdin io.WriteCloser
	out   *bufio.Scanner
	done  chan error
}

// startChild runs this binary with subcommand sub and waits for READY.
func startChild(sub string, args ...string) (*child, error) {
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
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout), done: make(chan error, 1)}
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
			c.url = u
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

// command sends a line to the child and waits for its OK.
func (c *child) command(line string) error {
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

// stop closes the child's stdin, which makes it shut down.
func (c *child) stop() {
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
