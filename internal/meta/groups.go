package meta

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Group is a named set of tenants and buckets that policies can target
// (FOR GROUP g ..., Crystal's G:g). A member is "tenant" or
// "tenant/bucket". Members need not exist yet: a policy may be written
// before the tenant it will apply to.
type Group struct {
	Name    string
	Members []string // sorted, no duplicates
	Created time.Time
	Updated time.Time
}

type groupRecord struct {
	V       int       `json:"v"`
	Name    string    `json:"name"`
	Members []string  `json:"members"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func (r *groupRecord) version() int { return r.V }

func (r *groupRecord) group() Group {
	return Group{Name: r.Name, Members: slices.Clone(r.Members), Created: r.Created, Updated: r.Updated}
}

// ValidGroupName reports whether name is a legal group name; the rules are
// the tenant names' (Crystal's groups are numbered: G:1 names group "1").
func ValidGroupName(name string) bool { return validName(name) }

func checkGroupName(name string) error {
	if !ValidGroupName(name) {
		return fmt.Errorf("%w %q: want 1-63 characters [a-z0-9][a-z0-9-_.]*", ErrInvalidGroupName, name)
	}
	return nil
}

// SplitGroupMember splits a group member into its tenant and bucket (empty
// for a whole tenant) and checks its shape.
func SplitGroupMember(member string) (tenant, bucket string, err error) {
	tenant, bucket, hasBucket := strings.Cut(member, "/")
	if !ValidTenantName(tenant) || (hasBucket && (checkBucketName(bucket) != nil || strings.Contains(bucket, "/"))) {
		return "", "", fmt.Errorf("%w %q: want TENANT or TENANT/BUCKET", ErrInvalidGroupMember, member)
	}
	return tenant, bucket, nil
}

// normalizeMembers checks members and returns them sorted without
// duplicates.
func normalizeMembers(members []string) ([]string, error) {
	out := make([]string, 0, len(members))
	for _, m := range members {
		if _, _, err := SplitGroupMember(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func getGroup(tx kvTx, name string) (*groupRecord, error) {
	var rec groupRecord
	ok, err := getRecord(tx, tblGroups, name, &rec)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrGroupNotFound, name)
	}
	return &rec, nil
}

// CreateGroup creates a group with the given members (possibly none).
func (s *Store) CreateGroup(ctx context.Context, name string, members []string) (Group, error) {
	if err := checkGroupName(name); err != nil {
		return Group{}, fmt.Errorf("meta: create group: %w", err)
	}
	ms, err := normalizeMembers(members)
	if err != nil {
		return Group{}, fmt.Errorf("meta: create group: %w", err)
	}
	var g Group
	err = s.kv.update(ctx, func(tx kvTx) error {
		raw, err := tx.get(tblGroups, name)
		if err != nil {
			return err
		}
		if raw != nil {
			return fmt.Errorf("%w: %q", ErrGroupExists, name)
		}
		now := s.timestamp()
		rec := groupRecord{V: recordVersion, Name: name, Members: ms, Created: now, Updated: now}
		if err := putRecord(tx, tblGroups, name, &rec); err != nil {
			return err
		}
		g = rec.group()
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return Group{}, fmt.Errorf("meta: create group: %w", err)
	}
	s.log.Info("group created", "group", name, "members", len(ms))
	return g, nil
}

// GetGroup returns one group or ErrGroupNotFound.
func (s *Store) GetGroup(ctx context.Context, name string) (Group, error) {
	var g Group
	err := s.kv.view(ctx, func(tx kvTx) error {
		rec, err := getGroup(tx, name)
		if err != nil {
			return err
		}
		g = rec.group()
		return nil
	})
	if err != nil {
		return Group{}, fmt.Errorf("meta: get group: %w", err)
	}
	return g, nil
}

// ListGroups lists all groups in name order.
func (s *Store) ListGroups(ctx context.Context) ([]Group, error) {
	var out []Group
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		out, err = listGroups(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list groups: %w", err)
	}
	return out, nil
}

func listGroups(tx kvTx) ([]Group, error) {
	out := []Group{}
	err := scanRecords(tx, tblGroups, "", func(rec *groupRecord) error {
		out = append(out, rec.group())
		return nil
	})
	return out, err
}

// DeleteGroup deletes a group. Policies that target it then match nothing
// through it; the policy compiler reports them.
func (s *Store) DeleteGroup(ctx context.Context, name string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		if _, err := getGroup(tx, name); err != nil {
			return err
		}
		if err := tx.del(tblGroups, name); err != nil {
			return err
		}
		_, err := bumpVersion(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("meta: delete group: %w", err)
	}
	s.log.Info("group deleted", "group", name)
	return nil
}

// AddGroupMembers adds members to a group; adding a member twice is not an
// error. It returns the group as it is now.
func (s *Store) AddGroupMembers(ctx context.Context, name string, members ...string) (Group, error) {
	add, err := normalizeMembers(members)
	if err != nil {
		return Group{}, fmt.Errorf("meta: add group members: %w", err)
	}
	g, err := s.updateGroup(ctx, name, func(rec *groupRecord) error {
		ms := append(slices.Clone(rec.Members), add...)
		slices.Sort(ms)
		rec.Members = slices.Compact(ms)
		return nil
	})
	if err != nil {
		return Group{}, fmt.Errorf("meta: add group members: %w", err)
	}
	return g, nil
}

// RemoveGroupMembers removes members from a group. Naming a member the
// group does not have fails with ErrNotGroupMember and changes nothing, so
// a typo does not pass for a removal. It returns the group as it is now.
func (s *Store) RemoveGroupMembers(ctx context.Context, name string, members ...string) (Group, error) {
	g, err := s.updateGroup(ctx, name, func(rec *groupRecord) error {
		for _, m := range members {
			if !slices.Contains(rec.Members, m) {
				return fmt.Errorf("%w: %q is not in group %q", ErrNotGroupMember, m, name)
			}
		}
		rec.Members = slices.DeleteFunc(slices.Clone(rec.Members), func(m string) bool { return slices.Contains(members, m) })
		return nil
	})
	if err != nil {
		return Group{}, fmt.Errorf("meta: remove group members: %w", err)
	}
	return g, nil
}

func (s *Store) updateGroup(ctx context.Context, name string, change func(*groupRecord) error) (Group, error) {
	var g Group
	err := s.kv.update(ctx, func(tx kvTx) error {
		rec, err := getGroup(tx, name)
		if err != nil {
			return err
		}
		if err := change(rec); err != nil {
			return err
		}
		rec.Updated = s.timestamp()
		if err := putRecord(tx, tblGroups, name, rec); err != nil {
			return err
		}
		g = rec.group()
		_, err = bumpVersion(tx)
		return err
	})
	if err == nil {
		s.log.Info("group changed", "group", name, "members", len(g.Members))
	}
	return g, err
}
