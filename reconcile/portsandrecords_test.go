package reconcile

import (
	"errors"
	"testing"
	"time"
)

// TestPortsAndRecordsTogether: the IP records are written while the
// Northbound transaction is in flight, and both have ended on return.
func TestPortsAndRecordsTogether(t *testing.T) {
	recordsStarted := make(chan struct{})
	recordsEnded := false
	submit := func() error {
		// The transaction does not end before the records have started:
		// run one after the other, this waits out its guard and fails.
		select {
		case <-recordsStarted:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("the IP records did not start while the transaction was in flight")
		}
	}
	records := func() error {
		close(recordsStarted)
		recordsEnded = true
		return errors.New("record write failed")
	}
	nbErr, recErr := portsAndRecords(submit, records, true)
	if nbErr != nil {
		t.Fatal(nbErr)
	}
	if recErr == nil || recErr.Error() != "record write failed" {
		t.Errorf("records error = %v, want the records' own", recErr)
	}
	if !recordsEnded {
		t.Error("returned before the records ended")
	}
}

// TestPortsAndRecordsTogetherFailedSubmit: a failed transaction still
// waits for the records it ran beside, and reports its own error.
func TestPortsAndRecordsTogetherFailedSubmit(t *testing.T) {
	release := make(chan struct{})
	ended := make(chan struct{})
	records := func() error {
		<-release
		close(ended)
		return nil
	}
	submit := func() error {
		close(release)
		return errors.New("stale epoch")
	}
	nbErr, recErr := portsAndRecords(submit, records, true)
	if nbErr == nil || nbErr.Error() != "stale epoch" {
		t.Errorf("submit error = %v, want the transaction's", nbErr)
	}
	if recErr != nil {
		t.Errorf("records error = %v", recErr)
	}
	select {
	case <-ended:
	default:
		t.Error("returned while the records were still being written")
	}
}

// TestPortsAndRecordsInOrder: with unplugged networks the records follow
// a transaction that succeeded, and are not written after one that failed.
func TestPortsAndRecordsInOrder(t *testing.T) {
	var order []string
	submit := func(err error) func() error {
		return func() error { order = append(order, "submit"); return err }
	}
	records := func() error { order = append(order, "records"); return nil }

	if nbErr, recErr := portsAndRecords(submit(nil), records, false); nbErr != nil || recErr != nil {
		t.Fatalf("errors %v, %v", nbErr, recErr)
	}
	if got := len(order); got != 2 || order[0] != "submit" || order[1] != "records" {
		t.Errorf("order %v, want [submit records]", order)
	}

	order = nil
	if nbErr, _ := portsAndRecords(submit(errors.New("down")), records, false); nbErr == nil {
		t.Error("the transaction's error was lost")
	}
	if len(order) != 1 || order[0] != "submit" {
		t.Errorf("order %v after a failed transaction, want [submit]", order)
	}
}

// TestPortsAndRecordsOneSide: with nothing for the Northbound the records
// are still written, and the other way round.
func TestPortsAndRecordsOneSide(t *testing.T) {
	for _, together := range []bool{true, false} {
		ran := 0
		f := func() error { ran++; return nil }
		if a, b := portsAndRecords(nil, f, together); a != nil || b != nil || ran != 1 {
			t.Errorf("together=%v, records only: errors %v, %v, ran %d", together, a, b, ran)
		}
		if a, b := portsAndRecords(f, nil, together); a != nil || b != nil || ran != 2 {
			t.Errorf("together=%v, transaction only: errors %v, %v, ran %d", together, a, b, ran)
		}
		if a, b := portsAndRecords(nil, nil, together); a != nil || b != nil || ran != 2 {
			t.Errorf("together=%v, neither: errors %v, %v, ran %d", together, a, b, ran)
		}
	}
}
