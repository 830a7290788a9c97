package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// versionStep runs change and checks that it moved the change version by
// exactly want (0: an error or a read must not bump it).
func versionStep(t *testing.T, s *Store, want uint64, what string, change func() error) error {
	t.Helper()
	before, err := s.PolicyVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cerr := change()
	after, err := s.PolicyVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if after-before != want {
		t.Fatalf("%s: version went %d -> %d, want +%d (err %v)", what, before, after, want, cerr)
	}
	return cerr
}

func mustNil(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestGroups(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)

		var g Group
		mustNil(t, "create", versionStep(t, s, 1, "create", func() (err error) {
			g, err = s.CreateGroup(ctx, "gold", []string{"t2", "t1/photos", "t1", "t2"})
			return err
		}))
		if g.Name != "gold" || !slices.Equal(g.Members, []string{"t1", "t1/photos", "t2"}) || g.Created.IsZero() {
			t.Fatalf("created %+v", g)
		}
		if _, err := s.CreateGroup(ctx, "empty", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateGroup(ctx, "1", nil); err != nil {
			t.Fatalf("numbered group (Crystal's G:1): %v", err)
		}
		for _, tc := range []struct {
			name    string
			members []string
			want    error
		}{
			{"gold", nil, ErrGroupExists},
			{"Gold", nil, ErrInvalidGroupName},
			{"", nil, ErrInvalidGroupName},
			{"silver", []string{"T1"}, ErrInvalidGroupMember},
			{"silver", []string{"t1/"}, ErrInvalidGroupMember},
			{"silver", []string{"t1/a/b"}, ErrInvalidGroupMember},
			{"silver", []string{"/b"}, ErrInvalidGroupMember},
			{"silver", []string{"t1/a\x00"}, ErrInvalidGroupMember},
		} {
			err := versionStep(t, s, 0, "bad create", func() error {
				_, err := s.CreateGroup(ctx, tc.name, tc.members)
				return err
			})
			if !errors.Is(err, tc.want) {
				t.Errorf("CreateGroup(%q, %q) = %v, want %v", tc.name, tc.members, err, tc.want)
			}
		}

		mustNil(t, "add", versionStep(t, s, 1, "add", func() (err error) {
			g, err = s.AddGroupMembers(ctx, "gold", "t3", "t1")
			return err
		}))
		if !slices.Equal(g.Members, []string{"t1", "t1/photos", "t2", "t3"}) || g.Updated.Before(g.Created) {
			t.Fatalf("after add: %+v", g)
		}
		mustNil(t, "remove", versionStep(t, s, 1, "remove", func() (err error) {
			g, err = s.RemoveGroupMembers(ctx, "gold", "t1", "t2")
			return err
		}))
		if !slices.Equal(g.Members, []string{"t1/photos", "t3"}) {
			t.Fatalf("after remove: %+v", g)
		}
		err := versionStep(t, s, 0, "remove non-member", func() error {
			_, err := s.RemoveGroupMembers(ctx, "gold", "t3", "t9")
			return err
		})
		if !errors.Is(err, ErrNotGroupMember) {
			t.Fatalf("remove non-member: %v", err)
		}
		if g, _ := s.GetGroup(ctx, "gold"); !slices.Equal(g.Members, []string{"t1/photos", "t3"}) {
			t.Fatalf("a failed removal changed the group: %+v", g)
		}
		if _, err := s.AddGroupMembers(ctx, "ghost", "t1"); !errors.Is(err, ErrGroupNotFound) {
			t.Fatalf("add to unknown group: %v", err)
		}
		if _, err := s.AddGroupMembers(ctx, "gold", "Bad"); !errors.Is(err, ErrInvalidGroupMember) {
			t.Fatalf("add bad member: %v", err)
		}

		gs, err := s.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range gs {
			names = append(names, g.Name)
		}
		if !slices.Equal(names, []string{"1", "empty", "gold"}) || gs[1].Members == nil {
			t.Fatalf("ListGroups = %+v", gs)
		}
		mustNil(t, "delete", versionStep(t, s, 1, "delete", func() error { return s.DeleteGroup(ctx, "gold") }))
		if _, err := s.GetGroup(ctx, "gold"); !errors.Is(err, ErrGroupNotFound) {
			t.Fatalf("deleted group: %v", err)
		}
		if err := s.DeleteGroup(ctx, "gold"); !errors.Is(err, ErrGroupNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

func TestPolicies(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		compiled := json.RawMessage(`{"filters":[{"name":"compression","params":{"engine":"gzip"}}]}`)

		var ps []Policy
		mustNil(t, "add", versionStep(t, s, 1, "add two", func() (err error) {
			ps, err = s.AddPolicies(ctx, []NewPolicy{
				{Name: "zip", Text: "zip: FOR TENANT t1 DO SET compression", Line: 1, State: PolicyActive, Compiled: compiled},
				{Text: "FOR TENANT t1 WHEN get_ops > 5 DO SET encryption", Line: 2, State: PolicyPending, Reason: "metric conditions are not executed yet"},
			})
			return err
		}))
		if len(ps) != 2 || ps[0].ID != "p1" || ps[1].ID != "p2" || ps[0].Seq != 1 || ps[1].Seq != 2 ||
			ps[0].Name != "zip" || ps[1].State != PolicyPending || ps[1].Reason == "" || ps[0].Created.IsZero() {
			t.Fatalf("added %+v", ps)
		}
		var back map[string]any
		if err := json.Unmarshal(ps[0].Compiled, &back); err != nil || back["filters"] == nil {
			t.Fatalf("compiled blob: %s %v", ps[0].Compiled, err)
		}

		// Nine more, so that ids sort differently as strings (p10 < p2).
		var batch []NewPolicy
		for i := range 9 {
			batch = append(batch, NewPolicy{Text: fmt.Sprintf("FOR TENANT t%d DO SET noop", i), Line: i + 1, State: PolicyActive})
		}
		mustNil(t, "add nine", versionStep(t, s, 1, "add nine", func() error {
			_, err := s.AddPolicies(ctx, batch)
			return err
		}))
		list, err := s.ListPolicies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range list {
			if p.Seq != uint64(i+1) || p.ID != fmt.Sprintf("p%d", i+1) {
				t.Fatalf("list[%d] = %s seq %d: not in declaration order", i, p.ID, p.Seq)
			}
		}
		if len(list) != 11 {
			t.Fatalf("%d policies listed", len(list))
		}

		for _, tc := range []struct {
			p    NewPolicy
			want error
		}{
			{NewPolicy{Name: "zip", Text: "FOR ALL DO SET noop", State: PolicyActive}, ErrPolicyNameTaken},
			{NewPolicy{Text: "  ", State: PolicyActive}, ErrInvalidPolicy},
			{NewPolicy{Text: "x", State: "on"}, ErrInvalidPolicy},
			{NewPolicy{Text: "x", State: PolicyActive, Name: "a b"}, ErrInvalidPolicy},
			{NewPolicy{Text: strings.Repeat("x", MaxPolicyText+1), State: PolicyActive}, ErrInvalidPolicy},
			{NewPolicy{Text: "x", State: PolicyActive, Compiled: json.RawMessage(`{"a":`)}, ErrInvalidBlob},
		} {
			err := versionStep(t, s, 0, "bad add", func() error {
				_, err := s.AddPolicies(ctx, []NewPolicy{{Text: "FOR ALL DO SET noop", State: PolicyActive}, tc.p})
				return err
			})
			if !errors.Is(err, tc.want) {
				t.Errorf("AddPolicies(%+v) = %v, want %v", tc.p.Name, err, tc.want)
			}
		}
		// A batch naming one policy twice is refused whole.
		_, err = s.AddPolicies(ctx, []NewPolicy{{Name: "dup", Text: "a", State: PolicyActive}, {Name: "dup", Text: "b", State: PolicyActive}})
		if !errors.Is(err, ErrPolicyNameTaken) {
			t.Fatalf("duplicate name in a batch: %v", err)
		}
		if list2, _ := s.ListPolicies(ctx); len(list2) != 11 {
			t.Fatalf("refused batches stored %d policies", len(list2)-11)
		}

		p, err := s.GetPolicy(ctx, "p2")
		if err != nil || p.Text != "FOR TENANT t1 WHEN get_ops > 5 DO SET encryption" || p.Line != 2 {
			t.Fatalf("GetPolicy = %+v, %v", p, err)
		}
		mustNil(t, "state", versionStep(t, s, 1, "set state", func() (err error) {
			p, err = s.SetPolicyState(ctx, "p2", PolicyActive, "")
			return err
		}))
		if p.State != PolicyActive || p.Reason != "" {
			t.Fatalf("after SetPolicyState: %+v", p)
		}
		if _, err := s.SetPolicyState(ctx, "p2", "bogus", ""); !errors.Is(err, ErrInvalidPolicy) {
			t.Fatalf("bad state: %v", err)
		}
		if _, err := s.GetPolicy(ctx, "p99"); !errors.Is(err, ErrPolicyNotFound) {
			t.Fatalf("unknown policy: %v", err)
		}

		mustNil(t, "delete", versionStep(t, s, 1, "delete", func() error { return s.DeletePolicy(ctx, "p1") }))
		if err := s.DeletePolicy(ctx, "p1"); !errors.Is(err, ErrPolicyNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		// The name is free again, and ids are never reused.
		ps, err = s.AddPolicies(ctx, []NewPolicy{{Name: "zip", Text: "zip: FOR TENANT t2 DO SET compression", Line: 1, State: PolicyActive}})
		if err != nil || ps[0].ID != "p12" {
			t.Fatalf("re-add after delete: %+v %v", ps, err)
		}
	})
}

// Concurrent writers on the same records: every change lands exactly once,
// the change version counts every one of them, and batches stay
// contiguous.
func TestConcurrentPolicyChanges(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		const writers, perBatch = 12, 3
		var wg sync.WaitGroup
		errs := make([]error, writers)
		got := make([][]Policy, writers)
		start := make(chan struct{})
		for i := range writers {
			wg.Go(func() {
				<-start
				var batch []NewPolicy
				for j := range perBatch {
					batch = append(batch, NewPolicy{Name: fmt.Sprintf("w%d-%d", i, j), Text: "FOR ALL DO SET noop", Line: j + 1, State: PolicyActive})
				}
				got[i], errs[i] = s.AddPolicies(ctx, batch)
				if errs[i] == nil {
					_, errs[i] = s.AddGroupMembers(ctx, "shared", fmt.Sprintf("t%d", i))
				}
			})
		}
		if _, err := s.CreateGroup(ctx, "shared", nil); err != nil {
			t.Fatal(err)
		}
		v0, _ := s.PolicyVersion(ctx)
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		seen := map[uint64]bool{}
		for i, ps := range got {
			for j, p := range ps {
				if seen[p.Seq] {
					t.Fatalf("sequence %d handed out twice", p.Seq)
				}
				seen[p.Seq] = true
				if p.Seq != ps[0].Seq+uint64(j) {
					t.Fatalf("writer %d's batch is not contiguous: %d after %d", i, p.Seq, ps[0].Seq)
				}
			}
		}
		list, err := s.ListPolicies(ctx)
		if err != nil || len(list) != writers*perBatch {
			t.Fatalf("%d policies stored, %v", len(list), err)
		}
		g, err := s.GetGroup(ctx, "shared")
		if err != nil || len(g.Members) != writers {
			t.Fatalf("group has %d members after %d concurrent adds: %v", len(g.Members), writers, err)
		}
		if v, _ := s.PolicyVersion(ctx); v != v0+2*writers {
			t.Fatalf("version %d after %d changes from %d", v, 2*writers, v0)
		}
	})
}

func TestSLOs(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		spec := json.RawMessage(`{"get":31457280,"put":10485760}`)
		var slo SLO
		mustNil(t, "put", versionStep(t, s, 1, "put", func() (err error) {
			slo, err = s.PutSLO(ctx, "t1", spec)
			return err
		}))
		if slo.Tenant != "t1" || string(slo.Spec) != string(spec) || slo.Updated.IsZero() {
			t.Fatalf("PutSLO = %+v", slo)
		}
		mustNil(t, "replace", versionStep(t, s, 1, "replace", func() error {
			_, err := s.PutSLO(ctx, "t1", json.RawMessage(`{"get":1}`))
			return err
		}))
		if _, err := s.PutSLO(ctx, "t0", json.RawMessage(`{"put":2}`)); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetSLO(ctx, "t1")
		if err != nil || string(got.Spec) != `{"get":1}` {
			t.Fatalf("GetSLO = %s, %v", got.Spec, err)
		}
		list, err := s.ListSLOs(ctx)
		if err != nil || len(list) != 2 || list[0].Tenant != "t0" || list[1].Tenant != "t1" {
			t.Fatalf("ListSLOs = %+v, %v", list, err)
		}
		for _, bad := range []json.RawMessage{nil, json.RawMessage(``), json.RawMessage(`{`), json.RawMessage(`1 2`)} {
			if _, err := s.PutSLO(ctx, "t1", bad); !errors.Is(err, ErrInvalidBlob) {
				t.Errorf("PutSLO(%q) = %v", bad, err)
			}
		}
		if _, err := s.PutSLO(ctx, "Bad", spec); !errors.Is(err, ErrInvalidTenantName) {
			t.Fatalf("bad tenant: %v", err)
		}
		mustNil(t, "delete", versionStep(t, s, 1, "delete", func() error { return s.DeleteSLO(ctx, "t1") }))
		if _, err := s.GetSLO(ctx, "t1"); !errors.Is(err, ErrSLONotFound) {
			t.Fatalf("deleted SLO: %v", err)
		}
		if err := s.DeleteSLO(ctx, "t1"); !errors.Is(err, ErrSLONotFound) {
			t.Fatalf("second delete: %v", err)
		}

		// A class's SLO is a record of its own, next to the tenant's.
		mustNil(t, "put class", versionStep(t, s, 1, "put class", func() error {
			_, err := s.PutClassSLO(ctx, "t0", "compaction", json.RawMessage(`{"limit":2}`))
			return err
		}))
		if got, err := s.GetClassSLO(ctx, "t0", "compaction"); err != nil || got.Tenant != "t0" || got.Class != "compaction" || string(got.Spec) != `{"limit":2}` {
			t.Fatalf("GetClassSLO = %+v, %v", got, err)
		}
		if got, err := s.GetSLO(ctx, "t0"); err != nil || got.Class != "" || string(got.Spec) != `{"put":2}` {
			t.Fatalf("tenant's SLO after a class's: %+v, %v", got, err)
		}
		if _, err := s.GetClassSLO(ctx, "t0", "flush"); !errors.Is(err, ErrSLONotFound) {
			t.Fatalf("unset class: %v", err)
		}
		// The record's key cannot be reached as a tenant name.
		if _, err := s.GetSLO(ctx, "t0\x00compaction"); !errors.Is(err, ErrSLONotFound) {
			t.Fatalf("class record through GetSLO: %v", err)
		}
		list, err = s.ListSLOs(ctx)
		if err != nil || len(list) != 2 || list[0].Class != "" || list[1].Class != "compaction" {
			t.Fatalf("ListSLOs with a class = %+v, %v", list, err)
		}
		if _, err := s.PutClassSLO(ctx, "t0", "Compaction!", spec); !errors.Is(err, ErrInvalidClassName) {
			t.Fatalf("bad class: %v", err)
		}
		if _, err := s.PutClassSLO(ctx, "Bad", "compaction", spec); !errors.Is(err, ErrInvalidTenantName) {
			t.Fatalf("bad tenant with a class: %v", err)
		}
		mustNil(t, "delete class", s.DeleteClassSLO(ctx, "t0", "compaction"))
		if err := s.DeleteClassSLO(ctx, "t0", "compaction"); !errors.Is(err, ErrSLONotFound) {
			t.Fatalf("second class delete: %v", err)
		}
		if _, err := s.GetSLO(ctx, "t0"); err != nil {
			t.Fatalf("tenant's SLO after the class's delete: %v", err)
		}
	})
}

func TestDataKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)

		// A new tenant has a data key from the start; creating it is a
		// change the data plane must see.
		mustNil(t, "create", versionStep(t, s, 1, "create tenant", func() error {
			_, err := s.CreateTenant(ctx, "acme")
			return err
		}))
		dk, err := s.DataKeys(ctx, "acme")
		if err != nil || dk.Current == "" || len(dk.History) != 1 || dk.History[0].ID != dk.Current || dk.History[0].Created.IsZero() {
			t.Fatalf("DataKeys of a new tenant = %+v, %v", dk, err)
		}
		first := dk.Current
		if cur, err := versionStep2(t, s, 0, func() (string, error) { return s.CurrentDataKey(ctx, "acme") }); err != nil || cur != first {
			t.Fatalf("CurrentDataKey = %q, %v; want %q", cur, err, first)
		}

		mustNil(t, "rotate", versionStep(t, s, 1, "rotate", func() (err error) {
			dk, err = s.RotateDataKey(ctx, "acme")
			return err
		}))
		if dk.Current == first || len(dk.History) != 2 || dk.History[0].ID != first || dk.History[1].ID != dk.Current {
			t.Fatalf("after rotation: %+v", dk)
		}
		for _, h := range dk.History {
			if !strings.HasPrefix(h.ID, "k-") || len(h.ID) != 18 {
				t.Fatalf("key id %q", h.ID)
			}
		}
		if cur, _ := s.CurrentDataKey(ctx, "acme"); cur != dk.Current {
			t.Fatalf("current after rotation %q, want %q", cur, dk.Current)
		}
		if _, err := s.RotateDataKey(ctx, "ghost"); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("rotate for unknown tenant: %v", err)
		}
		if _, err := s.CurrentDataKey(ctx, "ghost"); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("current for unknown tenant: %v", err)
		}

		// A tenant without a key (written before data keys existed) gets
		// one on first use, once.
		err = s.kv.update(ctx, func(tx kvTx) error {
			if err := putRecord(tx, tblTenants, "legacy", &tenantRecord{V: recordVersion, Name: "legacy", Created: s.timestamp()}); err != nil {
				return err
			}
			return tx.del(tblDataKeys, "legacy")
		})
		if err != nil {
			t.Fatal(err)
		}
		if dk, err := s.DataKeys(ctx, "legacy"); err != nil || dk.Current != "" || dk.History == nil || len(dk.History) != 0 {
			t.Fatalf("legacy tenant's keys: %+v, %v", dk, err)
		}
		var ids [8]string
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				var err error
				if ids[i], err = s.CurrentDataKey(ctx, "legacy"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id == "" || id != ids[0] {
				t.Fatalf("concurrent first uses disagree: %q", ids)
			}
		}

		all, err := s.ListDataKeys(ctx)
		if err != nil || len(all) != 2 || all[0].Tenant != "acme" || all[1].Tenant != "legacy" {
			t.Fatalf("ListDataKeys = %+v, %v", all, err)
		}
		// Deleting the tenant forgets its ids; a new tenant of that name
		// never gets an old one.
		mustNil(t, "delete", versionStep(t, s, 1, "delete tenant", func() error { return s.DeleteTenant(ctx, "acme") }))
		if _, err := s.CreateTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		dk2, _ := s.DataKeys(ctx, "acme")
		if len(dk2.History) != 1 || slices.ContainsFunc(dk.History, func(h DataKeyID) bool { return h.ID == dk2.Current }) {
			t.Fatalf("re-created tenant's keys %+v reuse %+v", dk2, dk)
		}
	})
}

func versionStep2[T any](t *testing.T, s *Store, want uint64, f func() (T, error)) (T, error) {
	t.Helper()
	var v T
	err := versionStep(t, s, want, "read", func() (err error) {
		v, err = f()
		return err
	})
	return v, err
}

func TestFilterRegistry(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		var e FilterEntry
		mustNil(t, "put", versionStep(t, s, 1, "put", func() (err error) {
			e, err = s.PutFilter(ctx, "watermark", json.RawMessage(`{"kind":"wasm","methods":["GET"]}`))
			return err
		}))
		if e.Name != "watermark" || e.Created.IsZero() || e.Updated != e.Created {
			t.Fatalf("PutFilter = %+v", e)
		}
		mustNil(t, "replace", versionStep(t, s, 1, "replace", func() (err error) {
			e, err = s.PutFilter(ctx, "watermark", json.RawMessage(`{"kind":"wasm","methods":["GET","PUT"]}`))
			return err
		}))
		got, err := s.GetFilter(ctx, "watermark")
		if err != nil || !strings.Contains(string(got.Spec), `"PUT"`) || got.Created != e.Created {
			t.Fatalf("GetFilter = %+v, %v", got, err)
		}
		if _, err := s.PutFilter(ctx, "a-filter_2", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		list, err := s.ListFilters(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "a-filter_2" {
			t.Fatalf("ListFilters = %+v, %v", list, err)
		}
		for _, bad := range []string{"", "Upper", "1st", "has space", "a/b", strings.Repeat("a", 64)} {
			if _, err := s.PutFilter(ctx, bad, json.RawMessage(`{}`)); !errors.Is(err, ErrInvalidFilterName) {
				t.Errorf("PutFilter(%q) = %v", bad, err)
			}
		}
		if _, err := s.PutFilter(ctx, "x", json.RawMessage(`nope`)); !errors.Is(err, ErrInvalidBlob) {
			t.Fatalf("bad spec: %v", err)
		}
		mustNil(t, "delete", versionStep(t, s, 1, "delete", func() error { return s.DeleteFilter(ctx, "watermark") }))
		if _, err := s.GetFilter(ctx, "watermark"); !errors.Is(err, ErrFilterNotFound) {
			t.Fatalf("deleted filter: %v", err)
		}
		if err := s.DeleteFilter(ctx, "watermark"); !errors.Is(err, ErrFilterNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

// Changes survive reopening the store, and Snapshot gives them together
// with the version they correspond to.
func TestSnapshotAndReopen(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s, err := st.open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.PolicyVersion(ctx); err != nil || v != 0 {
			t.Fatalf("fresh store version %d, %v", v, err)
		}
		_, err = s.CreateTenant(ctx, "t1")
		mustNil(t, "tenant", err)
		_, err = s.CreateGroup(ctx, "g", []string{"t1"})
		mustNil(t, "group", err)
		_, err = s.AddPolicies(ctx, []NewPolicy{{Text: "FOR GROUP g DO SET compression", Line: 1, State: PolicyActive, Compiled: json.RawMessage(`{"x":1}`)}})
		mustNil(t, "policy", err)
		_, err = s.PutSLO(ctx, "t1", json.RawMessage(`{"get":1}`))
		mustNil(t, "slo", err)
		_, err = s.PutFilter(ctx, "wm", json.RawMessage(`{}`))
		mustNil(t, "filter", err)
		want, err := s.Snapshot(ctx)
		mustNil(t, "snapshot", err)
		mustNil(t, "close", s.Close())

		s2 := st.store(t)
		got, err := s2.Snapshot(ctx)
		mustNil(t, "snapshot after reopen", err)
		if got.Version != 5 || len(got.Policies) != 1 || len(got.Groups) != 1 || len(got.SLOs) != 1 ||
			len(got.DataKeys) != 1 || len(got.Filters) != 1 {
			t.Fatalf("snapshot after reopen: %+v", got)
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Fatalf("snapshot changed across reopen:\n%s\n%s", wj, gj)
		}
		if got.Policies[0].Text != "FOR GROUP g DO SET compression" || string(got.Policies[0].Compiled) != `{"x":1}` {
			t.Fatalf("policy after reopen: %+v", got.Policies[0])
		}
	})
}
