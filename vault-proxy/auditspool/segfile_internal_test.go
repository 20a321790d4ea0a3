package auditspool

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
