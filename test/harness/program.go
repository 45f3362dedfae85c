package harness

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Program is a TB for programs outside `go test` (the demo, the bench
// driver): Fatalf aborts the function given to Run, and Close runs the
// cleanups in reverse order and removes the temporary folders.
type Program struct {
	// Log, when set, receives Logf lines.
	Log io.Writer

	dir string
	// mu guards cleanups and temps.
	mu       sync.Mutex
	cleanups []func()
	temps    int
}

var _ TB = (*Program)(nil)

type programAbort struct{ err error }

// NewProgram returns a Program whose temporary folders live under one new
// folder of the system's temp dir.
func NewProgram() (*Program, error) {
	dir, err := os.MkdirTemp("", "shardnet-")
	if err != nil {
		return nil, err
	}
	return &Program{dir: dir}, nil
}

// Helper implements TB.
func (p *Program) Helper() {}

// Logf implements TB.
func (p *Program) Logf(format string, args ...any) {
	if p.Log != nil {
		fmt.Fprintf(p.Log, format+"\n", args...)
	}
}

// Fatalf implements TB: it ends the function running under Run.
func (p *Program) Fatalf(format string, args ...any) {
	panic(programAbort{fmt.Errorf(format, args...)})
}

// Cleanup implements TB.
func (p *Program) Cleanup(f func()) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}

// TempDir implements TB.
func (p *Program) TempDir() string {
	p.mu.Lock()
	p.temps++
	d := filepath.Join(p.dir, fmt.Sprint(p.temps))
	p.mu.Unlock()
	if err := os.MkdirAll(d, 0o755); err != nil {
		p.Fatalf("%v", err)
	}
	return d
}

// Run calls f and returns its error, or the error of a Fatalf inside it.
func (p *Program) Run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(programAbort)
			if !ok {
				panic(r)
			}
			err = a.err
		}
	}()
	return f()
}

// Close runs the cleanups, last registered first, and removes the folders.
func (p *Program) Close() {
	p.mu.Lock()
	fs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	_ = os.RemoveAll(p.dir)
}
