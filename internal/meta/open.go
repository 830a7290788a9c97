package meta

import (
	"context"
	"fmt"
	"log/slog"
)

// DefaultBoltFile is the embedded store's file name inside the data
// directory.
const DefaultBoltFile = "meta.db"

// OpenURL opens the metadata store named by storeURL:
//
//	""                       the embedded store, <dataDir>/meta.db
//	bolt://PATH              the embedded store at PATH (relative to dataDir
//	                         unless absolute: bolt:///var/lib/facet/meta.db)
//	redis://[:PASSWORD@]HOST:PORT/DB[?prefix=P]
//	rediss://...             Redis (TLS), keys prefixed with P (default
//	                         "facet:"), go-redis URL options accepted
//
// masterKey and logger are as for Open. The URL is only ever logged or
// reported redacted.
func OpenURL(ctx context.Context, storeURL, dataDir string, masterKey []byte, logger *slog.Logger) (*Store, error) {
	path, scheme, err := boltPath(storeURL, dataDir)
	switch {
	case err != nil:
		return nil, err
	case path != "":
		return Open(ctx, path, masterKey, logger)
	case scheme == "redis" || scheme == "rediss":
		sl, err := newSealer(masterKey)
		if err != nil {
			return nil, err
		}
		db, shown, err := openRedis(ctx, storeURL, logger)
		if err != nil {
			return nil, err
		}
		return newStore(ctx, db, sl, logger, "metadata store "+shown, slog.String("backend", "redis"), slog.String("url", shown), slog.String("prefix", db.prefix))
	}
	// Not echoed: an unknown scheme may still carry a password.
	return nil, fmt.Errorf("meta: unsupported metadata store URL scheme %q: want bolt:// or redis://", scheme)
}
