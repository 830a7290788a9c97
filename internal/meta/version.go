package meta

import (
	"context"
	"fmt"
	"strconv"
)

// The change version is one counter for everything the data plane derives
// its policy table from: policies, groups, SLOs, the filter registry and
// tenants' data-key ids. Every change to them bumps it in the same
// transaction, so a node that polls PolicyVersion and reloads with Snapshot
// when it moved can never miss a change nor see half of one.
const versionKey = "change_version"

// PolicyVersion returns the current change version: 0 for a store that
// never had a change, then strictly increasing. It is one read, cheap
// enough to poll several times a second.
func (s *Store) PolicyVersion(ctx context.Context) (uint64, error) {
	var v uint64
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		v, err = readVersion(tx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("meta: policy version: %w", err)
	}
	return v, nil
}

func readVersion(tx kvTx) (uint64, error) { return readCounter(tx, versionKey) }

// bumpVersion increments the change version inside tx and returns the new
// value.
func bumpVersion(tx kvTx) (uint64, error) {
	v, err := readVersion(tx)
	if err != nil {
		return 0, err
	}
	v++
	return v, tx.put(tblSystem, versionKey, strconv.AppendUint(nil, v, 10))
}

// Snapshot is everything the data plane builds its policy table from, read
// in one transaction together with the change version it corresponds to.
type Snapshot struct {
	Version  uint64
	Policies []Policy // in declaration order
	Groups   []Group
	SLOs     []SLO
	DataKeys []DataKeys
	Filters  []FilterEntry
}

// Snapshot reads a consistent copy of the control plane's records.
func (s *Store) Snapshot(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		snap = Snapshot{}
		if snap.Version, err = readVersion(tx); err != nil {
			return err
		}
		if snap.Policies, err = listPolicies(tx); err != nil {
			return err
		}
		if snap.Groups, err = listGroups(tx); err != nil {
			return err
		}
		if snap.SLOs, err = listSLOs(tx); err != nil {
			return err
		}
		if snap.DataKeys, err = listDataKeys(tx); err != nil {
			return err
		}
		snap.Filters, err = listFilters(tx)
		return err
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("meta: snapshot: %w", err)
	}
	return snap, nil
}
