package bfilter

import (
	"context"
	"log/slog"
)

func nopInfo() *Info {
	return &Info{Name: "nop", Version: 1, Align: 1, Transparent: true,
		Doc: "passes data unchanged and logs each I/O (offset and length) at debug level",
		Config: func() Provisioner {
			return ProvisionFunc(func(env Env) (Filter, error) {
				l := env.Logger
				if l == nil {
					l = slog.New(slog.DiscardHandler)
				}
				return &nop{log: l.With("volume", env.Volume, "filter", "nop")}, nil
			})
		}}
}

type nop struct{ log *slog.Logger }

func (n *nop) Encode(off int64, b []byte) error {
	n.log.Log(context.Background(), slog.LevelDebug, "block write", "offset", off, "length", len(b))
	return nil
}

func (n *nop) Decode(off int64, b []byte) error {
	n.log.Log(context.Background(), slog.LevelDebug, "block read", "offset", off, "length", len(b))
	return nil
}
