package testproc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// StartSlots is how many reference servers may be starting at once on
// this machine, across every test process: a start (Node.js loading the
// reference PDS, a relay opening its database) is mostly CPU, and a
// dozen at once on a small machine take longer each than the timeout
// allows. Running servers do not hold a slot.
const StartSlots = 2

// AcquireStartSlot waits until one of the machine's StartSlots is free
// and takes it; the returned function gives it back (call it once the
// server is up, or has failed to start; later calls do nothing). The slots are advisory locks on
// files in the temporary directory, so they bound the test processes
// `go test -p` runs side by side, and a killed process frees its slot.
func AcquireStartSlot(ctx context.Context) (release func(), err error) {
	dir := filepath.Join(os.TempDir(), "lexview-testproc-slots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start slots: %w", err)
	}
	for {
		for i := range StartSlots {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("slot-%d.lock", i)), os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				return nil, fmt.Errorf("start slots: %w", err)
			}
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				var once sync.Once // closing the file releases the lock
				return func() { once.Do(func() { f.Close() }) }, nil
			}
			f.Close()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a start slot: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
