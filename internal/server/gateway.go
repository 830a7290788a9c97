package server

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/facet-sds/facet/internal/meta"
)

// The gateway role (`facet gateway`): `facet serve` with no state of its
// own, one of N behind a load balancer. Metadata lives in the fleet's
// Redis, objects in the fleet's S3 store, messages on the fleet's NATS; the
// process writes no file, embeds no bus and runs no controllers (they run
// as `facet controller`). What it keeps in memory — the policy table, the
// credential and bucket-ownership caches — is rebuilt from the shared
// stores and kept fresh by the bus, so it can be killed and replaced at
// any time.

// CheckGateway tells why opts cannot run as a stateless gateway: a store
// that is local to the machine, a missing admin token (it would have to be
// generated and stored) or no master key (it would have to be created).
// env reads the environment (os.Getenv). Messages name flags and URL
// schemes only, never a URL: URLs carry passwords.
func CheckGateway(opts Options, env func(string) string) error {
	var errs []error
	switch scheme := urlScheme(opts.MetaURL); {
	case opts.MetaURL == "":
		errs = append(errs, errors.New("--meta is required: the fleet's shared metadata store, redis://HOST:PORT/DB (a gateway keeps no metadata of its own)"))
	case scheme != "redis" && scheme != "rediss":
		errs = append(errs, fmt.Errorf("--meta: a %q store is local to one machine; a gateway needs the fleet's shared store, redis://HOST:PORT/DB", scheme))
	}
	switch scheme := urlScheme(opts.BackendURL); {
	case opts.BackendURL == "":
		errs = append(errs, errors.New("--backend is required: the fleet's object store, s3://ACCESS:SECRET@HOST:PORT/BUCKET[/PREFIX] (a gateway keeps no objects of its own)"))
	case scheme != "s3":
		errs = append(errs, fmt.Errorf("--backend: scheme %q; a gateway needs a shared S3-compatible store, s3://ACCESS:SECRET@HOST:PORT/BUCKET[/PREFIX]", scheme))
	}
	switch {
	case opts.BusURL == "":
		errs = append(errs, errors.New("--bus is required: the fleet's NATS bus, nats://HOST:4222 (`facet bus` or a NATS cluster); a gateway embeds no bus"))
	case urlScheme(opts.BusURL) != "nats" && urlScheme(opts.BusURL) != "tls":
		errs = append(errs, fmt.Errorf("--bus: scheme %q; want nats://HOST:PORT", urlScheme(opts.BusURL)))
	}
	if opts.BusListen != "" {
		errs = append(errs, errors.New("--bus-listen: a gateway embeds no bus"))
	}
	if opts.AdminToken == "" {
		errs = append(errs, errors.New("--admin-token (or FACET_ADMIN_TOKEN) is required: a gateway does not generate and store one"))
	}
	if env("FACET_MASTER_KEY") == "" && opts.MasterKeyFile == "" {
		errs = append(errs, errors.New("the fleet's master key is required in FACET_MASTER_KEY (base64) or --master-key-file: a gateway does not create one"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("facet gateway: %w", errors.Join(errs...))
	}
	return nil
}

func urlScheme(u string) string {
	scheme, _, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	return strings.ToLower(scheme)
}

// fleetMasterKey reads the master key of a stateless role: FACET_MASTER_KEY,
// else the file opts.MasterKeyFile (the 32 raw bytes `facet serve` writes,
// or base64). Nothing is ever created.
func fleetMasterKey(opts Options) ([]byte, error) {
	if v := os.Getenv("FACET_MASTER_KEY"); v != "" || opts.MasterKeyFile == "" {
		return masterKey(opts.DataDir)
	}
	data, err := os.ReadFile(opts.MasterKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--master-key-file: %w", err)
	}
	if len(data) == meta.MasterKeySize {
		return data, nil
	}
	k, err := meta.DecodeMasterKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("--master-key-file: %w", err)
	}
	return k, nil
}
