package harness

import (
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/database/inmemory"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb/serverdb"
	"github.com/ovn-kubernetes/libovsdb/server"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// StartEmbeddedNB serves an in-memory OVN_Northbound database from this
// process with libovsdb's server, on a loopback port. It is for the local
// demo on machines without ovsdb-server; the end-to-end suites use StartNB.
func StartEmbeddedNB(t TB) *NB {
	t.Helper()
	nbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatalf("harness: NB model: %v", err)
	}
	srvModel, err := serverdb.FullDatabaseModel()
	if err != nil {
		t.Fatalf("harness: _Server model: %v", err)
	}
	nbSchema, srvSchema := nbdb.Schema(), serverdb.Schema()
	logger := logr.Discard()
	db := inmemory.NewDatabase(map[string]model.ClientDBModel{nbSchema.Name: nbModel, srvSchema.Name: srvModel}, &logger)
	nbDB, errs := model.NewDatabaseModel(nbSchema, nbModel)
	if len(errs) > 0 {
		t.Fatalf("harness: NB database model: %v", errs)
	}
	srvDB, errs := model.NewDatabaseModel(srvSchema, srvModel)
	if len(errs) > 0 {
		t.Fatalf("harness: _Server database model: %v", errs)
	}
	s, err := server.NewOvsdbServer(db, &logger, nbDB, srvDB)
	if err != nil {
		t.Fatalf("harness: embedded NB: %v", err)
	}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	go func() { _ = s.Serve("tcp", addr) }()
	t.Cleanup(s.Close)
	deadline := time.Now().Add(10 * time.Second)
	for !s.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("harness: embedded NB not ready on %s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("harness: embedded NB not accepting on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &NB{Endpoint: "tcp:" + addr, Dir: filepath.Join(t.TempDir())}
}

// HaveOVSDBServer reports whether Debian's ovsdb-server is installed.
func HaveOVSDBServer() bool {
	for _, p := range []string{"/usr/sbin/ovsdb-server", "/usr/bin/ovsdb-server"} {
		if fileExists(p) {
			return true
		}
	}
	return false
}
