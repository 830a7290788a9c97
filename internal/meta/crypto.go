package meta

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MasterKeySize is the length of the server's master key (AES-256).
const MasterKeySize = 32

// ErrWrongMasterKey means the master key cannot decrypt what the store holds:
// the key file was replaced or belongs to another data directory.
var ErrWrongMasterKey = errors.New("master key does not match the metadata store")

// LoadOrCreateMasterKey reads the 32-byte master key at path, or creates it
// with fresh random bytes (mode 0600, fsynced file and directory) when it does
// not exist. Concurrent first starts agree on one key: the file appears
// atomically through a hard link that fails if another process won.
func LoadOrCreateMasterKey(path string) ([]byte, error) {
	key, err := readMasterKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key = make([]byte, MasterKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate master key: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".master.key-*")
	if err != nil {
		return nil, fmt.Errorf("create master key: %w", err)
	}
	defer os.Remove(tmp.Name()) // the link below is the real file; the temp name always goes
	if err := writeSync(tmp, key); err != nil {
		return nil, fmt.Errorf("write master key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readMasterKey(path) // another process created it first
		}
		return nil, fmt.Errorf("install master key: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("install master key: %w", err)
	}
	return key, nil
}

func readMasterKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read master key: %w", err)
	}
	if len(key) != MasterKeySize {
		return nil, fmt.Errorf("master key %s: want %d bytes, file has %d", path, MasterKeySize, len(key))
	}
	return key, nil
}

// writeSync writes b to f (created 0600 by os.CreateTemp), fsyncs and closes it.
func writeSync(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		_ = f.Close() // the write error is the one worth reporting
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// DecodeMasterKey parses a base64 master key (standard or URL alphabet,
// padded or not), as given in FACET_MASTER_KEY. The error never echoes the
// input.
func DecodeMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != MasterKeySize {
				return nil, fmt.Errorf("master key: want %d bytes, got %d", MasterKeySize, len(key))
			}
			return key, nil
		}
	}
	return nil, errors.New("master key: not valid base64")
}

// sealer encrypts secrets at rest with AES-256-GCM. Each value gets a random
// nonce, stored in front of the ciphertext; the additional data binds a value
// to its record, so a sealed secret copied onto another access key fails to
// open.
type sealer struct{ aead cipher.AEAD }

func newSealer(masterKey []byte) (*sealer, error) {
	if len(masterKey) != MasterKeySize {
		return nil, fmt.Errorf("master key: want %d bytes, got %d", MasterKeySize, len(masterKey))
	}
	block, err := aes.NewCipher(masterKey)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(plaintext []byte, ad string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return s.aead.Seal(nonce, nonce, plaintext, []byte(ad)), nil
}

func (s *sealer) open(sealed []byte, ad string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, ErrWrongMasterKey
	}
	pt, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(ad))
	if err != nil {
		// GCM cannot tell a wrong key from a tampered value; both mean the
		// secret is unusable with this key.
		return nil, ErrWrongMasterKey
	}
	return pt, nil
}
