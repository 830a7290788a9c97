package checksum

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/facet-sds/facet/internal/s3err"
)

// Check values of the CRC catalogue and the hash standards for "123456789",
// base64 over the big-endian digest as S3 shows them.
var check = map[Algorithm]string{
	CRC32:     "y/Q5Jg==",     // 0xCBF43926
	CRC32C:    "4waSgw==",     // 0xE3069283
	CRC64NVME: "rosUhgp5mIg=", // 0xAE8B14860A799888
	SHA1:      "98O8HYCOBHMq32eZZczDTKeuNEE=",
	SHA256:    "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=",
}

const (
	checkInput  = "123456789"
	checkMD5Hex = "25f9e794323b453885f5181f1b624d0b"
	checkMD5B64 = "JfnnlDI7RTiF9RgfG2JNCw=="
)

func TestKnownVectors(t *testing.T) {
	for a, want := range check {
		if got := a.Sum([]byte(checkInput)); got != want {
			t.Errorf("%s(%q) = %s, want %s", a, checkInput, got, want)
		}
	}
	// From the AWS trailing-header example: 66560 bytes of 'a'.
	if got := CRC32C.Sum(bytes.Repeat([]byte{'a'}, 66560)); got != "sOO8/Q==" {
		t.Errorf("CRC32C of the AWS example = %s, want sOO8/Q==", got)
	}
	// S3 documents the CRC64NVME of an empty object.
	if got := CRC64NVME.Sum(nil); got != "AAAAAAAAAAA=" {
		t.Errorf("CRC64NVME of nothing = %s", got)
	}
}

func TestAlgorithmNames(t *testing.T) {
	for _, a := range Algorithms() {
		got, ok := ParseAlgorithm(strings.ToLower(string(a)))
		if !ok || got != a {
			t.Errorf("ParseAlgorithm(%q) = %q, %v", strings.ToLower(string(a)), got, ok)
		}
		if a.Header() != "x-amz-checksum-"+strings.ToLower(string(a)) {
			t.Errorf("%s header %q", a, a.Header())
		}
		if len(a.New().Sum(nil)) != a.Size() {
			t.Errorf("%s size %d", a, a.Size())
		}
	}
	if _, ok := ParseAlgorithm("MD5"); ok {
		t.Error("MD5 parsed as an additional checksum")
	}
}

func headers(kv ...string) http.Header {
	h := make(http.Header)
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func readAll(t *testing.T, r io.Reader) ([]byte, error) {
	t.Helper()
	var out []byte
	buf := make([]byte, 3)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func wantCode(t *testing.T, err error, want s3err.Code, msgPart string) {
	t.Helper()
	var se *s3err.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want %s", err, want.Name)
	}
	if se.Code != want || !strings.Contains(se.Error(), msgPart) {
		t.Fatalf("got %v, want %s containing %q", se, want.Name, msgPart)
	}
}

func TestReaderVerifiesHeaders(t *testing.T) {
	for _, a := range Algorithms() {
		t.Run(string(a), func(t *testing.T) {
			spec, err := ParseHeaders(headers("Content-MD5", checkMD5B64, a.Header(), check[a]))
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(iotest.OneByteReader(strings.NewReader(checkInput)), spec, nil)
			got, err := readAll(t, r)
			if err != nil || string(got) != checkInput {
				t.Fatalf("read %q, %v", got, err)
			}
			if r.MD5Hex() != checkMD5Hex || r.Size() != int64(len(checkInput)) {
				t.Fatalf("md5 %s size %d", r.MD5Hex(), r.Size())
			}
			if sums := r.Checksums(); len(sums) != 1 || sums[string(a)] != check[a] {
				t.Fatalf("checksums %v", sums)
			}

			// One flipped bit in the body fails the same request.
			r = NewReader(strings.NewReader("123456788"), spec, nil)
			_, err = readAll(t, r)
			wantCode(t, err, s3err.BadDigest, "Content-MD5")
			spec.ContentMD5 = nil
			r = NewReader(strings.NewReader("123456788"), spec, nil)
			_, err = readAll(t, r)
			wantCode(t, err, s3err.InvalidChecksum, string(a)+" you specified did not match")
			if r.MD5Hex() != "" || r.Checksums() != nil {
				t.Fatal("digests exposed after a failed verification")
			}
			if _, again := r.Read(make([]byte, 1)); again != err {
				t.Fatalf("error not sticky: %v", again)
			}
		})
	}
}

func TestReaderTrailer(t *testing.T) {
	spec, err := ParseHeaders(headers("X-Amz-Trailer", "x-amz-checksum-crc64nvme", "X-Amz-Sdk-Checksum-Algorithm", "CRC64NVME"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		value    string
		wantCode *s3err.Code
		msg      string
	}{
		{"matches", check[CRC64NVME], nil, ""},
		{"differs", CRC64NVME.Sum([]byte("other")), &s3err.InvalidChecksum, "CRC64NVME"},
		{"missing", "", &s3err.InvalidRequest, "missing"},
		{"malformed", "not base64!", &s3err.InvalidRequest, "invalid"},
		{"wrong size", check[CRC32], &s3err.InvalidRequest, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := ""
			eof := false
			src := &eofSpy{r: strings.NewReader(checkInput), eof: &eof}
			r := NewReader(src, spec, func(name string) string {
				if !eof {
					t.Error("trailer asked for before the body ended")
				}
				asked = name
				return tc.value
			})
			_, err := readAll(t, r)
			if asked != "x-amz-checksum-crc64nvme" {
				t.Fatalf("trailer asked for %q", asked)
			}
			if tc.wantCode == nil {
				if err != nil {
					t.Fatal(err)
				}
				if r.Checksums()["CRC64NVME"] != check[CRC64NVME] {
					t.Fatalf("checksums %v", r.Checksums())
				}
				return
			}
			wantCode(t, err, *tc.wantCode, tc.msg)
		})
	}
}

type eofSpy struct {
	r   io.Reader
	eof *bool
}

func (s *eofSpy) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		*s.eof = true
	}
	return n, err
}

// TestReaderEndsWithErrorNotEOF is the property the backend relies on: a
// mismatching body never yields io.EOF, even to io.Copy-style callers that
// receive the last bytes together with EOF.
func TestReaderEndsWithErrorNotEOF(t *testing.T) {
	spec, _ := ParseHeaders(headers("x-amz-checksum-sha256", check[SHA256]))
	r := NewReader(iotest.DataErrReader(strings.NewReader("12345678X")), spec, nil)
	n, err := io.Copy(io.Discard, r)
	if n != 9 {
		t.Fatalf("copied %d bytes", n)
	}
	wantCode(t, err, s3err.InvalidChecksum, "SHA256")
}

func TestReaderPassesSourceErrors(t *testing.T) {
	cause := s3err.New(s3err.SignatureDoesNotMatch)
	r := NewReader(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(cause)), Spec{}, nil)
	_, err := io.ReadAll(r)
	if err != cause {
		t.Fatalf("got %v, want the source's error", err)
	}
	if _, err := r.Read(make([]byte, 1)); err != cause {
		t.Fatalf("not sticky: %v", err)
	}
}

func TestComputeOnly(t *testing.T) {
	spec, err := ParseHeaders(headers("x-amz-checksum-algorithm", "crc32c"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(strings.NewReader(checkInput), spec, nil)
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if got := r.Checksums(); len(got) != 1 || got["CRC32C"] != check[CRC32C] {
		t.Fatalf("checksums %v", got)
	}
	// No checksum asked for: only the MD5.
	r = NewReader(strings.NewReader(""), Spec{}, nil)
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if r.MD5Hex() != "d41d8cd98f00b204e9800998ecf8427e" || r.Checksums() != nil || r.Size() != 0 {
		t.Fatalf("empty body: %s %v %d", r.MD5Hex(), r.Checksums(), r.Size())
	}
}

func TestParseHeadersErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want s3err.Code
	}{
		{"md5 not base64", headers("Content-MD5", "zzz"), s3err.InvalidDigest},
		{"md5 wrong size", headers("Content-MD5", check[SHA1]), s3err.InvalidDigest},
		{"md5 empty", headers("Content-MD5", ""), s3err.InvalidDigest},
		{"crc32 wrong size", headers("x-amz-checksum-crc32", check[CRC64NVME]), s3err.InvalidRequest},
		{"sha256 not base64", headers("x-amz-checksum-sha256", "!!"), s3err.InvalidRequest},
		{"two checksums", headers("x-amz-checksum-crc32", check[CRC32], "x-amz-checksum-sha1", check[SHA1]), s3err.InvalidRequest},
		{"header and trailer", headers("x-amz-checksum-crc32", check[CRC32], "x-amz-trailer", "x-amz-checksum-sha1"), s3err.InvalidRequest},
		{"unknown trailer", headers("x-amz-trailer", "x-amz-checksum-md5"), s3err.InvalidRequest},
		{"unknown algorithm", headers("x-amz-sdk-checksum-algorithm", "MD5"), s3err.InvalidRequest},
		{"algorithm differs", headers("x-amz-sdk-checksum-algorithm", "SHA1", "x-amz-checksum-crc32", check[CRC32]), s3err.InvalidRequest},
		{"algorithm headers differ", headers("x-amz-sdk-checksum-algorithm", "SHA1", "x-amz-checksum-algorithm", "CRC32"), s3err.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHeaders(tc.h)
			wantCode(t, err, tc.want, "")
		})
	}
	// Non-checksum trailers and headers are not this package's business.
	spec, err := ParseHeaders(headers("x-amz-trailer", "x-amz-meta-later", "x-amz-checksum-mode", "ENABLED",
		"x-amz-checksum-type", "FULL_OBJECT", "x-amz-sdk-checksum-algorithm", "crc32", "x-amz-checksum-crc32", check[CRC32]))
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Trailer) != 0 || len(spec.Compute) != 0 || spec.Expected[CRC32] != check[CRC32] {
		t.Fatalf("spec %+v", spec)
	}
}

func TestMultipartETag(t *testing.T) {
	got, err := MultipartETag([]string{`"3303e12af474ca11d85ed2966a932992"`, "3ea4e15b91a17dc76052c56cfcdf67a2"})
	if err != nil || got != "0732917abc3288784e318ac0aab1757a-2" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := MultipartETag([]string{"abc"}); err == nil {
		t.Fatal("accepted a non-MD5 ETag")
	}
}

func TestComposite(t *testing.T) {
	got, err := Composite(CRC32, []string{CRC32.Sum([]byte("part one")), CRC32.Sum([]byte("part two"))})
	if err != nil || got != "FZJWqg==-2" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := Composite(CRC32, []string{check[SHA1]}); err == nil {
		t.Fatal("accepted a checksum of the wrong size")
	}
	if _, err := Composite("MD5", nil); err == nil {
		t.Fatal("accepted an unknown algorithm")
	}
}

// TestFullObject checks the combined CRC against the CRC of the whole, for
// splits that include empty and odd-sized parts.
func TestFullObject(t *testing.T) {
	data := make([]byte, 100_003)
	for i := range data {
		data[i] = byte(i*131 + i>>9)
	}
	splits := [][]int{{}, {0}, {1}, {50_000}, {1, 2, 3}, {7, 7, 65_536}, {99_999, 100_003}, {4096, 8192, 8193, 70_000}}
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		for _, cuts := range splits {
			var parts []PartSum
			prev := 0
			for _, c := range append(cuts, len(data)) {
				parts = append(parts, PartSum{Sum: a.Sum(data[prev:c]), Size: int64(c - prev)})
				prev = c
			}
			got, err := FullObject(a, parts)
			if err != nil {
				t.Fatal(err)
			}
			if want := a.Sum(data); got != want {
				t.Errorf("%s split at %v: combined %s, whole %s", a, cuts, got, want)
			}
		}
	}
	if got, err := FullObject(CRC64NVME, nil); err != nil || got != CRC64NVME.Sum(nil) {
		t.Errorf("no parts: %q, %v", got, err)
	}
	if _, err := FullObject(SHA256, []PartSum{{Sum: check[SHA256], Size: 9}}); err == nil {
		t.Error("combined SHA256 checksums")
	}
	if _, err := FullObject(CRC32, []PartSum{{Sum: check[CRC64NVME], Size: 9}}); err == nil {
		t.Error("accepted a checksum of the wrong size")
	}
}

func TestPipelinedMatchesInline(t *testing.T) {
	data := make([]byte, 3*pipeBufSize+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	spec := Spec{Compute: []Algorithm{CRC32C}}
	inline := NewReader(bytes.NewReader(data), spec, nil)
	piped := NewReader(iotest.HalfReader(bytes.NewReader(data)), spec, nil).Pipelined()
	for _, r := range []*Reader{inline, piped} {
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	}
	if inline.MD5Hex() != piped.MD5Hex() || inline.Checksums()["CRC32C"] != piped.Checksums()["CRC32C"] || piped.Size() != int64(len(data)) {
		t.Fatalf("inline %s %v, piped %s %v", inline.MD5Hex(), inline.Checksums(), piped.MD5Hex(), piped.Checksums())
	}
	// Abandoned before EOF: Close must not hang or leak.
	r := NewReader(bytes.NewReader(data), spec, nil).Pipelined()
	_, _ = io.CopyN(io.Discard, r, 1000)
	_ = r.Close()
}
