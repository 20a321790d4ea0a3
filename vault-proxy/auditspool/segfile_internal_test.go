package auditspool

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	vaultproxy "github.com/payorch/vault-proxy"
)

// On a filesystem without fallocate a segment is reserved by writing
// zeros after its frames, which leaves the frames as they were.
func TestWriteZerosReservesAfterTheFrames(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	frames := bytes.Repeat([]byte{'x'}, 100)
	if _, err := f.Write(frames); err != nil {
		t.Fatal(err)
	}
	const capacity = 3*zeroChunk + 123
	if err := writeZeros(f, int64(len(frames)), capacity); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != capacity || !bytes.Equal(b[:len(frames)], frames) || !allZero(b[len(frames):]) {
		t.Fatalf("%d bytes after reserving %d, frames kept: %v", len(b), capacity, bytes.Equal(b[:len(frames)], frames))
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 < capacity {
		t.Fatalf("%d bytes allocated, want %d", st.Blocks*512, capacity)
	}
}

// A zeroed stretch inside a segment (pages that never reached the disk)
// is scanned in time linear in the segment: the scan asked at every byte
// whether the rest was zeros, which took a minute for 256 KiB of zeros in
// 8 MiB.
func TestScanOfAZeroedStretchIsLinear(t *testing.T) {
	const size = 1 << 20
	b := make([]byte, 0, size)
	var seq uint64
	for len(b) < size-4096 {
		seq++
		f, err := encodeFrame(vaultproxy.AuditEvent{Actor: "a", MerchantAccountID: "m", Action: "forward", Outcome: "success"})
		if err != nil {
			t.Fatal(err)
		}
		sealFrame(f.b, seq)
		b = append(b, f.b...)
		putFrame(f)
	}
	clear(b[size/4 : size/4+256<<10]) // zeros in the middle
	start := time.Now()
	sc := scanFrames(b, 1, nil)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("scanning 1 MiB with 256 KiB of zeros took %v", d)
	}
	if sc.last != seq || len(sc.holes) != 1 {
		t.Fatalf("last %d of %d, holes %v: the frames after the zeros were not found", sc.last, seq, sc.holes)
	}
}
