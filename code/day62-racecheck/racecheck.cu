// Day 62: two planted shared-memory bugs, each beside its fix, and a harness that
// shows which ones a plain output check notices.
//
//   buggy  scanTileRacy                  in-place scan, read and write of a cell unordered
//          reverseTilesDivergentBarrier  __syncthreads() inside `if (i < n)`
//   fixed  scanTileFixed                 register copy, barrier, write, barrier
//          reverseTilesFixed             every thread reaches both barriers every lap
//
// Build (H200):  nvcc -std=c++17 -O2 -lineinfo -arch=sm_90 -o racecheck racecheck.cu
// Run:           ./racecheck [buggy|fixed|all]      or   ./racecheck stayalive 32|256 (may hang)
//
// The kernels are extern "C" so that a cubin of this file can be loaded by name
// (the Python sweep does that); compute-sanitizer then prints them without arguments.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kMaxThreads = 1024;    // shared tiles are sized for the largest block
constexpr int kTilesPerBlock = 4;    // each reverse block walks this many consecutive tiles
constexpr int kElements = 8 * 1024 + 611;  // 611 = 13 * 47: no block size divides it
constexpr int kBlockSizes[] = {32, 256};

// Every CUDA call goes through here; a failure names the call and the line.
bool check(cudaError_t err, const char* what, int line) {
    if (err == cudaSuccess) return true;
    std::fprintf(stderr, "racecheck.cu:%d: %s failed: %s (%s)\n", line, what,
                 cudaGetErrorString(err), cudaGetErrorName(err));
    return false;
}
#define CHECK(call) check((call), #call, __LINE__)

}  // namespace

// ---------------------------------------------------------------- the scan pair

extern "C" __global__ void scanTileRacy(const float* in, float* out, int n) {
    __shared__ float tile[kMaxThreads];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    tile[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    // snippet: racy-step
    for (int offset = 1; offset < blockDim.x; offset *= 2) {
        if (tid >= offset) {
            // Reads tile[tid - offset] while thread tid - offset may be writing it.
            tile[tid] += tile[tid - offset];
        }
        __syncthreads();  // orders this step against the next, not read against write
    }
    // end snippet
    if (i < n) out[i] = tile[tid];
}

extern "C" __global__ void scanTileFixed(const float* in, float* out, int n) {
    __shared__ float tile[kMaxThreads];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    tile[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    // snippet: fixed-step
    for (int offset = 1; offset < blockDim.x; offset *= 2) {
        const float left = (tid >= offset) ? tile[tid - offset] : 0.0f;
        __syncthreads();  // every read of this step happens before any write
        tile[tid] += left;
        __syncthreads();  // every write happens before the next step's reads
    }
    // end snippet
    if (i < n) out[i] = tile[tid];
}

// ------------------------------------------------------------- the reverse pair

extern "C" __global__ void reverseTilesDivergentBarrier(const float* in, float* out, int n) {
    __shared__ float tile[kMaxThreads];
    const int tid = threadIdx.x;
    for (int lap = 0; lap < kTilesPerBlock; ++lap) {
        const int base = (blockIdx.x * kTilesPerBlock + lap) * blockDim.x;
        if (base >= n) return;  // uniform: the whole block is past the data
        const int i = base + tid;
        // snippet: divergent-barrier
        if (i < n) {
            tile[tid] = in[i];
            __syncthreads();  // on the partial tile, only in-range threads get here
            out[i] = tile[blockDim.x - 1 - tid];  // may be a cell nobody loaded this lap
            __syncthreads();
        }
        // end snippet
    }
}

extern "C" __global__ void reverseTilesFixed(const float* in, float* out, int n) {
    __shared__ float tile[kMaxThreads];
    const int tid = threadIdx.x;
    for (int lap = 0; lap < kTilesPerBlock; ++lap) {
        const int base = (blockIdx.x * kTilesPerBlock + lap) * blockDim.x;
        if (base >= n) return;  // uniform: the whole block is past the data
        const int i = base + tid;
        // snippet: fixed-barrier
        tile[tid] = (i < n) ? in[i] : 0.0f;  // out-of-range lanes load a zero
        __syncthreads();                      // reached by every thread, every lap
        if (i < n) out[i] = tile[blockDim.x - 1 - tid];
        __syncthreads();                      // the next lap overwrites the tile
        // end snippet
    }
}

// ------------------------------------------------------- the same bug, staying alive
//
// reverseTilesDivergentBarrier again with one change: a thread that skips the guarded
// barriers does not exit. The loop ends with `break` instead of `return`, and every thread
// then waits at one more barrier after the loop, where a longer kernel would go on to use the
// tile. On the partial tile the in-range threads wait at the barrier inside the guard while
// the out-of-range threads, still alive, wait at the one after the loop. Run only by
// `./racecheck stayalive THREADS`, never by buggy or all: it may hang.

extern "C" __global__ void reverseTilesStayAlive(const float* in, float* out, int n) {
    __shared__ float tile[kMaxThreads];
    const int tid = threadIdx.x;
    // snippet: stay-alive
    for (int lap = 0; lap < kTilesPerBlock; ++lap) {
        const int base = (blockIdx.x * kTilesPerBlock + lap) * blockDim.x;
        if (base >= n) break;  // uniform, as before, but the threads stay in the kernel
        const int i = base + tid;
        if (i < n) {
            tile[tid] = in[i];
            __syncthreads();  // on the partial tile, only in-range threads get here
            out[i] = tile[blockDim.x - 1 - tid];
            __syncthreads();
        }
    }
    __syncthreads();  // out-of-range threads of the partial tile wait here, alive
    // end snippet
}

// ------------------------------------------------------------------ the harness

namespace {

// Owns one device allocation, so that no return path can leak it.
class DeviceFloats {
public:
    explicit DeviceFloats(int count) : count_(count) {
        ok_ = CHECK(cudaMalloc(&ptr_, sizeof(float) * static_cast<size_t>(count)));
    }
    ~DeviceFloats() {
        if (ptr_ != nullptr) CHECK(cudaFree(ptr_));
    }
    DeviceFloats(const DeviceFloats&) = delete;
    DeviceFloats& operator=(const DeviceFloats&) = delete;
    bool ok() const { return ok_; }
    float* get() const { return ptr_; }
    size_t bytes() const { return sizeof(float) * static_cast<size_t>(count_); }

private:
    float* ptr_ = nullptr;
    int count_;
    bool ok_ = false;
};

using Kernel = void (*)(const float*, float*, int);

struct Case {
    const char* name;
    Kernel kernel;
    bool isScan;   // which reference applies
    bool gated;    // only the fixed kernels may fail the run
};

constexpr Case kCases[] = {
    {"scanTileRacy", scanTileRacy, true, false},
    {"reverseTilesDivergentBarrier", reverseTilesDivergentBarrier, false, false},
    {"scanTileFixed", scanTileFixed, true, true},
    {"reverseTilesFixed", reverseTilesFixed, false, true},
};

// Not in kCases: it may hang, so only its own mode runs it.
constexpr Case kStayAlive = {"reverseTilesStayAlive", reverseTilesStayAlive, false, false};

// Inclusive scan that restarts at every tile of `threads` elements, in double.
std::vector<double> scanReference(const std::vector<float>& in, int threads) {
    std::vector<double> ref(in.size());
    double sum = 0.0;
    for (size_t i = 0; i < in.size(); ++i) {
        if (i % threads == 0) sum = 0.0;
        sum += in[i];
        ref[i] = sum;
    }
    return ref;
}

// Each tile reversed in place; a source index past the end contributes 0.0f.
std::vector<double> reverseReference(const std::vector<float>& in, int threads) {
    const size_t n = in.size();
    std::vector<double> ref(n);
    for (size_t i = 0; i < n; ++i) {
        const size_t base = i - i % threads;
        const size_t src = base + (threads - 1 - i % threads);
        ref[i] = src < n ? in[src] : 0.0;
    }
    return ref;
}

struct Outcome {
    int mismatches = 0;
    int firstBad = -1;
    float got = 0.0f;
    double want = 0.0;
};

Outcome compare(const std::vector<float>& got, const std::vector<double>& want) {
    Outcome o;
    for (size_t i = 0; i < got.size(); ++i) {
        // Every value is an integer below 2^24, so float is exact: no tolerance.
        if (static_cast<double>(got[i]) != want[i]) {
            if (o.mismatches == 0) {
                o.firstBad = static_cast<int>(i);
                o.got = got[i];
                o.want = want[i];
            }
            ++o.mismatches;
        }
    }
    return o;
}

bool deviceFits(int* warpSize) {
    int device = 0;
    cudaDeviceProp prop{};
    if (!CHECK(cudaGetDevice(&device)) || !CHECK(cudaGetDeviceProperties(&prop, device))) return false;
    std::printf("device: %s | compute capability %d.%d | warp size %d\n", prop.name, prop.major,
                prop.minor, prop.warpSize);
    *warpSize = prop.warpSize;
    if (prop.warpSize != 32) {
        std::fprintf(stderr, "this lesson assumes 32-thread warps; the device has %d\n", prop.warpSize);
        return false;
    }
    for (int threads : kBlockSizes) {
        if (threads > prop.maxThreadsPerBlock || threads > kMaxThreads) {
            std::fprintf(stderr, "block size %d does not fit (device limit %d, tile %d)\n", threads,
                         prop.maxThreadsPerBlock, kMaxThreads);
            return false;
        }
    }
    return true;
}

// Runs one kernel at one block size; false only when a CUDA call failed.
bool runCase(const Case& c, int threads, const std::vector<float>& in, const DeviceFloats& dIn,
             const DeviceFloats& dOut, Outcome* outcome) {
    const int n = static_cast<int>(in.size());
    const int tiles = (n + threads - 1) / threads;
    const int blocks = c.isScan ? tiles : (tiles + kTilesPerBlock - 1) / kTilesPerBlock;
    // A sentinel in the output makes an element nobody wrote show up as a mismatch.
    if (!CHECK(cudaMemset(dOut.get(), 0xff, dOut.bytes()))) return false;
    c.kernel<<<blocks, threads>>>(dIn.get(), dOut.get(), n);
    if (!CHECK(cudaGetLastError()) || !CHECK(cudaDeviceSynchronize())) return false;
    std::vector<float> got(in.size());
    if (!CHECK(cudaMemcpy(got.data(), dOut.get(), dOut.bytes(), cudaMemcpyDeviceToHost))) return false;
    *outcome = compare(got, c.isScan ? scanReference(in, threads) : reverseReference(in, threads));
    return true;
}

// One table row; a gated kernel that mismatches also prints what it got. Returns 1 on a gate failure.
int printRow(const Case& c, int threads, const Outcome& o) {
    char firstBad[16] = "-";
    if (o.mismatches > 0) std::snprintf(firstBad, sizeof firstBad, "%d", o.firstBad);
    std::printf("%7d | %-28s | %10d | %9s | %s\n", threads, c.name, o.mismatches, firstBad,
                c.gated ? "yes" : "no");
    if (!c.gated || o.mismatches == 0) return 0;
    std::printf("GATE FAILED: %s at %d threads: %d mismatches, first bad index %d "
                "(got %.1f, want %.1f)\n",
                c.name, threads, o.mismatches, o.firstBad, o.got, o.want);
    return 1;
}

// The split of the input into tiles of `threads` elements that every kernel here walks.
void printTiling(int threads) {
    std::printf("tiling: threads %d | full tiles %d | partial tile %d elements\n", threads,
                kElements / threads, kElements % threads);
}

// Runs `mode` (buggy, fixed, all, or stayalive at `stayThreads` threads a block).
int run(const char* mode, int stayThreads) {
    int warpSize = 0;
    if (!deviceFits(&warpSize)) return EXIT_FAILURE;
    std::printf("elements: %d (%d*1024 + %d)\n", kElements, kElements / 1024, kElements % 1024);
    std::printf("mode: %s\n", mode);
    const bool stayAlive = stayThreads > 0;
    for (int threads : kBlockSizes) {
        if (!stayAlive || threads == stayThreads) printTiling(threads);
    }

    std::vector<float> in(kElements);
    for (int i = 0; i < kElements; ++i) in[i] = static_cast<float>(i);
    DeviceFloats dIn(kElements), dOut(kElements);
    if (!dIn.ok() || !dOut.ok()) return EXIT_FAILURE;
    if (!CHECK(cudaMemcpy(dIn.get(), in.data(), dIn.bytes(), cudaMemcpyHostToDevice))) return EXIT_FAILURE;

    std::printf("threads | kernel                       | mismatches | first bad | gated\n");
    if (stayAlive) {
        // A hang stops the program inside runCase: no row is printed, and the caller's
        // timeout is the only way out.
        Outcome o;
        if (!runCase(kStayAlive, stayThreads, in, dIn, dOut, &o)) return EXIT_FAILURE;
        printRow(kStayAlive, stayThreads, o);
        std::printf("\nfixed kernels: not run\n");
        return EXIT_SUCCESS;
    }
    const bool wantBuggy = std::strcmp(mode, "fixed") != 0;
    const bool wantFixed = std::strcmp(mode, "buggy") != 0;
    int gateFailures = 0;
    for (int threads : kBlockSizes) {
        for (const Case& c : kCases) {
            if (c.gated ? !wantFixed : !wantBuggy) continue;
            Outcome o;
            if (!runCase(c, threads, in, dIn, dOut, &o)) return EXIT_FAILURE;
            gateFailures += printRow(c, threads, o);
        }
    }
    // Buggy rows are reported, never gated: a race and a divergent barrier are undefined
    // behaviour, so any count they give is one sample, not a property of the code.
    if (gateFailures > 0) {
        std::printf("\n%d fixed kernel run(s) gave wrong answers\n", gateFailures);
        return EXIT_FAILURE;
    }
    std::printf("\nfixed kernels: %s\n", wantFixed ? "all match the reference" : "not run");
    return EXIT_SUCCESS;
}

// The block size after `stayalive`: one of kBlockSizes, written as plain digits; 0 otherwise.
int parseStayThreads(const char* text) {
    for (int threads : kBlockSizes) {
        char digits[16];
        std::snprintf(digits, sizeof digits, "%d", threads);
        if (std::strcmp(text, digits) == 0) return threads;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // Line-buffered, so the table interleaves correctly with compute-sanitizer's reports.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const char* mode = argc > 1 ? argv[1] : "all";
    int stayThreads = 0;
    bool known = false;
    if (std::strcmp(mode, "stayalive") == 0) {
        stayThreads = argc == 3 ? parseStayThreads(argv[2]) : 0;
        known = stayThreads > 0;
    } else {
        known = argc <= 2 && (std::strcmp(mode, "buggy") == 0 || std::strcmp(mode, "fixed") == 0 ||
                              std::strcmp(mode, "all") == 0);
    }
    if (!known) {
        std::fprintf(stderr, "usage: %s [buggy|fixed|all]\n       %s stayalive 32|256\n", argv[0],
                     argv[0]);
        return EXIT_FAILURE;
    }
    return run(mode, stayThreads);
}
