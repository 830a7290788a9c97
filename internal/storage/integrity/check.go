package integrity

import (
	"errors"
	"fmt"
	"io"
)

// ErrNoSums is returned by Check for an object written before checksums
// were kept: its bytes cannot be verified.
var ErrNoSums = errors.New("no checksums recorded")

// Check reads a whole stored stream of size bytes and checks every block
// against the sums in its system metadata: nil when all pass, ErrCorrupt
// (wrapped) at the first block that does not, ErrNoSums when there are no
// sums. facet fsck and the scrubber read data files through it.
func Check(r io.Reader, size int64, system map[string]string, what string) error {
	sums, err := Of(system)
	if err != nil {
		return fmt.Errorf("integrity: %s: %w", what, err)
	}
	if sums == nil {
		return ErrNoSums
	}
	if sums.Size() != size {
		return fmt.Errorf("integrity: %s: %d stored bytes, checksums for %d: %w", what, size, sums.Size(), ErrCorrupt)
	}
	v := newVerifier(io.NopCloser(r), sums, 0, 0, size, what, func(error) {})
	defer v.Close()
	_, err = io.Copy(io.Discard, v)
	return err
}
