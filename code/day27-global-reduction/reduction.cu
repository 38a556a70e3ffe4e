// Day 27: a reduction through global memory, finished by the last block to arrive.
//
// Every block sums its tile of the input, publishes the sum in global memory
// (partial[blockIdx.x]) and takes a ticket from an atomic counter; the block that draws the
// last ticket adds up all the partial sums. This is the single-pass pattern of the CUDA
// Programming Guide's memory-fence example and of the CUDA sample threadFenceReduction.
// Four versions of the publishing step:
//   racy   no fence: nothing orders the partial-sum store before the ticket, or the last
//          block's reads after it;
//   fence  __threadfence() between the store and the ticket, and in the last block after it;
//   relacq the ticket is a release fetch_add, and the last block issues an acquire fence;
//   writer only the first of fence's two fences (half a fix: reported, not gated).
//
// The harness launches each version many times, a chunk of each in turn, and checks every
// result exactly (integers; two inputs used in turn, so that a sum left over from the previous
// launch is always wrong). It also records what the last block read for every partial sum, so
// a wrong result names the stale partial, the block that published it and how many tickets
// were drawn after it. Only the fixed versions are gated: a wrong result of `fence` or
// `relacq` makes the program fail. The racy and writer results are reported, never gated: a
// race is undefined behaviour.
//
// The harness's own setup runs on the stream the kernels run on, and the host waits for it
// before the first launch. Every chunk of launches starts with its own setup, on that stream
// too: a short kernel that stands for a harness's work before a batch (`setupWork`, 50 us),
// then the partial sums and the counter set to zero. `--setup unordered` keeps the mistake an
// earlier version of this harness made, for the page to show: that setup runs on the legacy
// default stream (cudaMemset, a launch without a stream), while the kernels run on a stream
// created with cudaStreamNonBlocking, which does not wait for the legacy stream. Nothing
// orders the two, so the zeroing can land while the chunk's first launches run.
//
// Optional stress, all blocks resident at once: --lineup makes every block wait at a spin
// barrier just before publishing; --spare adds one block a multiprocessor (or --spare-blocks N)
// after the reducing ones, which either hammers a scratch buffer (scratch) or keeps reading
// the partial sums with ordinary loads (partials). --time times the versions instead.
//
// Build: nvcc -std=c++17 -O2 -lineinfo -arch=sm_90 -o reduction reduction.cu
// Run:   ./reduction --help

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),     \
                         __FILE__, __LINE__, cudaGetErrorString(err_));                      \
            std::exit(EXIT_FAILURE);                                                         \
        }                                                                                    \
    } while (0)

enum Variant { kRacy = 0, kFence = 1, kRelAcq = 2, kWriter = 3 };
static const char* kVariantNames[] = {"racy", "fence", "relacq", "writer"};
constexpr int kVariants = 4;
constexpr unsigned long long kSetupWorkNs = 50000;  // a chunk's setup work: 50 us
static bool gated(int v) { return v == kFence || v == kRelAcq; }  // the fixes; a race is not judged

// What the harness asks of one launch besides the reduction itself.
struct Probe {
    int* seen;              // recording: what the last block read for each partial (or null)
    unsigned* ticketOf;     // recording: the ticket each block drew (or null)
    unsigned* lineup;       // spin barrier before publishing (null: off)
    unsigned* lineupMissed; // blocks that gave up waiting at the spin barrier
    int spare;              // what the spare blocks (those past `blocks`) do: kNoSpare, ...
    unsigned* scratch;      // the spare blocks' scratch buffer
    unsigned scratchWords;
    unsigned* done;         // the last block writes `epoch` here; spare blocks stop when they see it
    unsigned epoch;
};

// Spare blocks keep the memory system busy while the reduction runs (the harness's stress).
// kScratch: stores and loads over a scratch buffer larger than L2. kPartials: ordinary loads
// of the partial sums, which leave copies of their lines in this multiprocessor's L1 cache.
enum Spare { kNoSpare = 0, kScratch = 1, kPartials = 2 };
static const char* kSpareNames[] = {"none", "scratch", "partials"};

__device__ __forceinline__ unsigned long long globalNs() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Sum over the block; every thread gets the result. `scratch` holds one int per warp.
__device__ int blockSum(int v, int* scratch) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();  // the previous call's readers are done with scratch
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    int total = 0;
    for (int w = 0; w < (int)(blockDim.x + 31) / 32; ++w) total += scratch[w];
    return total;
}

// The harness's line-up: every block waits here until all have arrived (or 200 us pass),
// so that the blocks publish at nearly the same moment.
__device__ void lineUp(const Probe& p, unsigned blocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(p.lineup, 1u);
        const volatile unsigned* arrived = p.lineup;
        const unsigned long long until = globalNs() + 200000ull;
        while (*arrived < blocks) {
            if (globalNs() > until) {
                atomicAdd(p.lineupMissed, 1u);
                break;
            }
        }
    }
    __syncthreads();
}

__device__ void spareBlock(const Probe& p, const int* partial, unsigned blocks) {
    const unsigned long long until = globalNs() + 2000000ull;  // 2 ms at most
    const volatile unsigned* done = p.done;
    unsigned sink = 0;
    for (unsigned it = 0;; ++it) {
        if ((it & 63u) == 0 && (*done == p.epoch || globalNs() > until)) break;
        if (p.spare == kScratch) {
            const unsigned a = (blockIdx.x * blockDim.x + threadIdx.x + it * 4099u * 32u) % p.scratchWords;
            p.scratch[a] = it;
            sink += p.scratch[(a + p.scratchWords / 2) % p.scratchWords];
        } else {
            sink += (unsigned)partial[(threadIdx.x + it * blockDim.x) % blocks];
        }
    }
    if (sink == 0x9E3779B9u) p.scratch[0] = sink;  // keeps the loads alive
}

// Stands for the work a harness's setup queues before a batch (filling inputs, a warm-up
// launch): one thread waits `ns` nanoseconds.
__global__ void setupWork(unsigned long long ns) {
    const unsigned long long until = globalNs() + ns;
    while (globalNs() < until) {
    }
}

// `blocks` blocks reduce (gridDim.x of them, unless the harness adds spare blocks after them).
template <int V>
__global__ void reduceLastBlock(const int* in, int perThread, int* partial, unsigned* count,
                                int* result, unsigned blocks, Probe probe) {
    __shared__ int scratch[32];
    __shared__ bool amLast;
    if (blockIdx.x >= blocks) {
        spareBlock(probe, partial, blocks);
        return;
    }
    const int tile = blockDim.x * perThread;
    const int* mine = in + (size_t)blockIdx.x * tile;
    int v = 0;
    for (int i = threadIdx.x; i < tile; i += blockDim.x) v += mine[i];
    const int sum = blockSum(v, scratch);
    if (probe.lineup) lineUp(probe, blocks);

    if constexpr (V == kRacy) {
        // snippet: publish-racy
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = sum;                     // publish this block's sum,
            const unsigned ticket = atomicAdd(count, 1u);  // then take a ticket
            amLast = (ticket == blocks - 1);
            if (probe.ticketOf) probe.ticketOf[blockIdx.x] = ticket;
        }
        __syncthreads();
        // end snippet
    } else if constexpr (V == kFence) {
        // snippet: publish-fence
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = sum;
            __threadfence();                               // the sum is visible before the ticket
            const unsigned ticket = atomicAdd(count, 1u);
            amLast = (ticket == blocks - 1);
            if (amLast) __threadfence();                   // and the last block reads after it
            if (probe.ticketOf) probe.ticketOf[blockIdx.x] = ticket;
        }
        __syncthreads();
        // end snippet
    } else if constexpr (V == kWriter) {
        // snippet: publish-writer
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = sum;
            __threadfence();                               // the writer's fence only
            const unsigned ticket = atomicAdd(count, 1u);
            amLast = (ticket == blocks - 1);
            if (probe.ticketOf) probe.ticketOf[blockIdx.x] = ticket;
        }
        __syncthreads();
        // end snippet
    } else {
        // snippet: publish-relacq
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = sum;
            cuda::atomic_ref<unsigned, cuda::thread_scope_device> tickets(*count);
            const unsigned ticket = tickets.fetch_add(1u, cuda::memory_order_release);
            amLast = (ticket == blocks - 1);
            if (amLast) cuda::atomic_thread_fence(cuda::memory_order_acquire,
                                                  cuda::thread_scope_device);
            if (probe.ticketOf) probe.ticketOf[blockIdx.x] = ticket;
        }
        __syncthreads();
        // end snippet
    }

    // snippet: last-block
    if (amLast) {                                          // the same in every version
        int t = 0;
        for (int b = threadIdx.x; b < (int)blocks; b += blockDim.x) {
            const int p = partial[b];
            if (probe.seen) probe.seen[b] = p;             // the harness's record of the read
            t += p;
        }
        const int total = blockSum(t, scratch);
        if (threadIdx.x == 0) {
            *result = total;
            *count = 0;                                    // ready for the next launch
            if (probe.lineup) *probe.lineup = 0;
            if (probe.spare) *probe.done = probe.epoch;
        }
    }
    // end snippet
}

// ---------------------------------------------------------------------------------------
// Host side

struct Options {
    int blocks = 1056;  // 8 a multiprocessor on an H200
    int threads = 64;
    int perThread = 4;
    long launches = 100;
    int chunk = 500;
    bool lineup = false;
    int spare = kNoSpare;
    int spareBlocks = 0;  // 0: one a multiprocessor
    bool time = false;
    bool unorderedSetup = false;  // --setup unordered: the harness's zeroing races the launches
    int timeRounds = 20;
    int timeBatch = 200;
    std::vector<int> variants{kRacy, kFence, kRelAcq};
    std::string json;
};

static void usage(const char* prog) {
    std::fprintf(stdout,
                 "usage: %s [--variants racy,fence,relacq,writer] [--launches N] [--blocks N]\n"
                 "          [--threads N] [--per-thread N] [--lineup] [--spare none|scratch|partials]\n"
                 "          [--spare-blocks N] [--chunk N] [--setup ordered|unordered] [--json FILE]\n"
                 "       %s --time [--time-rounds N] [--time-batch N] [--variants ...] [--json FILE]\n"
                 "Launches every version (default racy,fence,relacq) --launches times, in turn, and\n"
                 "checks every result; --time instead times them. Only fence and relacq are gated.\n",
                 prog, prog);
}

static bool parseLong(const char* s, long lo, long hi, long* out) {
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static int lookup(const std::string& name, const char* const* names, int count) {
    for (int j = 0; j < count; ++j)
        if (name == names[j]) return j;
    return -1;
}

static bool parseOptions(int argc, char** argv, Options* o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        long v = 0;
        auto number = [&](long lo, long hi) { return hasValue && parseLong(argv[++i], lo, hi, &v); };
        if (a == "--lineup") o->lineup = true;
        else if (a == "--time") o->time = true;
        else if (a == "--launches") { if (!number(1, 100000000)) return false; o->launches = v; }
        else if (a == "--blocks") { if (!number(2, 1 << 20)) return false; o->blocks = (int)v; }
        else if (a == "--threads") { if (!number(32, 1024)) return false; o->threads = (int)v; }
        else if (a == "--per-thread") { if (!number(1, 1024)) return false; o->perThread = (int)v; }
        else if (a == "--chunk") { if (!number(1, 100000)) return false; o->chunk = (int)v; }
        else if (a == "--spare-blocks") { if (!number(1, 1 << 16)) return false; o->spareBlocks = (int)v; }
        else if (a == "--time-rounds") { if (!number(1, 10000)) return false; o->timeRounds = (int)v; }
        else if (a == "--time-batch") { if (!number(1, 100000)) return false; o->timeBatch = (int)v; }
        else if (a == "--json") { if (!hasValue) return false; o->json = argv[++i]; }
        else if (a == "--setup") {
            if (!hasValue) return false;
            const std::string how = argv[++i];
            if (how != "ordered" && how != "unordered") return false;
            o->unorderedSetup = how == "unordered";
        }
        else if (a == "--spare") {
            if (!hasValue || (o->spare = lookup(argv[++i], kSpareNames, 3)) < 0) return false;
        } else if (a == "--variants") {
            if (!hasValue) return false;
            o->variants.clear();
            const std::string list = argv[++i];
            size_t pos = 0;
            while (pos <= list.size()) {
                const size_t comma = std::min(list.find(',', pos), list.size());
                const int k = lookup(list.substr(pos, comma - pos), kVariantNames, kVariants);
                if (k < 0 || std::count(o->variants.begin(), o->variants.end(), k)) return false;
                o->variants.push_back(k);
                pos = comma + 1;
            }
        } else return false;
    }
    return o->threads % 32 == 0 && !(o->time && o->unorderedSetup);
}

// Clopper-Pearson: the exact binomial interval, from the regularized incomplete beta function.
static double betacf(double a, double b, double x) {  // continued fraction (modified Lentz)
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (std::fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 10000; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + aa * d; if (std::fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c; if (std::fabs(c) < tiny) c = tiny;
        d = 1.0 / d; h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + aa * d; if (std::fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c; if (std::fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        const double del = d * c;
        h *= del;
        if (std::fabs(del - 1.0) < 1e-14) break;
    }
    return h;
}

static double betaInc(double a, double b, double x) {  // I_x(a, b)
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    const double lbt = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                       b * std::log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return std::exp(lbt) * betacf(a, b, x) / a;
    return 1.0 - std::exp(lbt) * betacf(b, a, 1.0 - x) / b;
}

static double betaQuantile(double a, double b, double q) {  // x with I_x(a, b) = q, by bisection
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (lo + hi);
        if (betaInc(a, b, mid) < q) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

static void clopperPearson(long k, long n, double* low, double* high) {
    const double alpha = 0.05;
    *low = k == 0 ? 0.0 : betaQuantile((double)k, (double)(n - k + 1), alpha / 2);
    *high = k == n ? 1.0 : betaQuantile((double)(k + 1), (double)(n - k), 1.0 - alpha / 2);
}

struct Example {  // one stale partial that the last block read
    int variant;
    long launch;
    int block;
    unsigned fromLast;  // how many tickets before the last one this block drew
    int got, want;
    const char* was;    // what the stale value was
};

struct Tally {
    long launches = 0, wrong = 0, stalePartials = 0, maxStaleInLaunch = 0, examples = 0;
    long stalePrevious = 0, staleZero = 0, staleOther = 0;  // what the stale values were
    long staleOwn = 0;     // the last block's own partial sum, read wrong
    long noLastBlock = 0;  // launches in which no block drew the last ticket
    long long maxAbsError = 0;  // over launches after the first (which can only read zeros)
    long staleFromLast[5] = {0, 0, 0, 0, 0};  // drawn 0, 1, 2, 3, or 4 and more tickets before the last
};

template <int V>
static void launchOne(const Options& o, cudaStream_t s, const int* in, int* partial, unsigned* count,
                      int* result, const Probe& p) {
    const int grid = o.blocks + (p.spare ? o.spareBlocks : 0);
    reduceLastBlock<V><<<grid, o.threads, 0, s>>>(in, o.perThread, partial, count, result, o.blocks, p);
}

static void launchVariant(int v, const Options& o, cudaStream_t s, const int* in, int* partial,
                          unsigned* count, int* result, const Probe& p) {
    if (v == kRacy) launchOne<kRacy>(o, s, in, partial, count, result, p);
    else if (v == kFence) launchOne<kFence>(o, s, in, partial, count, result, p);
    else if (v == kRelAcq) launchOne<kRelAcq>(o, s, in, partial, count, result, p);
    else launchOne<kWriter>(o, s, in, partial, count, result, p);
    CHECK(cudaGetLastError());
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Device buffers, freed on every path out of main.
struct Buffers {
    int* in[2] = {nullptr, nullptr};
    int *partial = nullptr, *result = nullptr, *seen = nullptr;
    unsigned *count = nullptr, *ticket = nullptr, *flags = nullptr, *scratch = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    ~Buffers() {  // errors here cannot be acted on any more; they are reported
        for (int* p : {in[0], in[1], partial, result, seen}) if (p) CHECK(cudaFree(p));
        for (unsigned* p : {count, ticket, flags, scratch}) if (p) CHECK(cudaFree(p));
        if (e0) CHECK(cudaEventDestroy(e0));
        if (e1) CHECK(cudaEventDestroy(e1));
        if (stream) CHECK(cudaStreamDestroy(stream));
    }
};

static int runMain(int argc, char** argv) {
    Options o;
    if (argc == 2 && std::strcmp(argv[1], "--help") == 0) {
        usage(argv[0]);
        return EXIT_SUCCESS;
    }
    if (!parseOptions(argc, argv, &o)) {
        usage(argv[0]);
        return EXIT_FAILURE;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    if (prop.warpSize != 32) {
        std::fprintf(stderr, "this program assumes a warp of 32 threads; the device has %d\n", prop.warpSize);
        return EXIT_FAILURE;
    }
    if (o.threads > prop.maxThreadsPerBlock) {
        std::fprintf(stderr, "%d threads a block is more than the device allows (%d)\n", o.threads,
                     prop.maxThreadsPerBlock);
        return EXIT_FAILURE;
    }
    if (o.spareBlocks == 0) o.spareBlocks = prop.multiProcessorCount;
    int perSm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, reduceLastBlock<kRacy>, o.threads, 0));
    const long resident = (long)perSm * prop.multiProcessorCount;
    const long grid = o.blocks + (o.spare ? o.spareBlocks : 0);
    const long tile = (long)o.threads * o.perThread;
    const long n = tile * o.blocks;

    std::printf("device: %s | compute capability %d.%d | warp size %d\n", prop.name, prop.major, prop.minor,
                prop.warpSize);
    std::printf("multiprocessors: %d\n", prop.multiProcessorCount);
    std::printf("reduction: %d blocks x %d threads, %d elements a thread: %ld elements, %ld a block\n",
                o.blocks, o.threads, o.perThread, n, tile);
    std::printf("resident at once: up to %ld blocks (%d a multiprocessor)\n", resident, perSm);
    std::printf("line-up before publishing: %s | spare blocks: %s", o.lineup ? "on" : "off",
                kSpareNames[o.spare]);
    if (o.spare) std::printf(" (%d of them)", o.spareBlocks);
    std::printf("\n");
    if (!o.time)
        std::printf("setup: %s\n", o.unorderedSetup ? "unordered (zeroing on the legacy default stream, before every chunk)"
                                                   : "ordered (on the kernels' stream, before every chunk)");
    // The line-up and the spare blocks wait for other blocks: all must be resident at once.
    if ((o.lineup || o.spare) && grid > resident) {
        std::fprintf(stderr, "--lineup and --spare need every block resident at once: %ld blocks, at most %ld\n",
                     grid, resident);
        return EXIT_FAILURE;
    }
    if (n > (1L << 28)) {
        std::fprintf(stderr, "input too large (%ld elements)\n", n);
        return EXIT_FAILURE;
    }

    // Two inputs, used in turn: b[i] = a[i] + 1, so every block's sum differs between the two
    // by exactly the block's element count, and a partial left over from the previous launch is
    // always wrong.
    std::vector<int> hostIn[2], want[2];
    long long wantTotal[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
        hostIn[k].resize(n);
        want[k].assign(o.blocks, 0);
        for (long i = 0; i < n; ++i) {
            hostIn[k][i] = (int)(((unsigned)i * 2654435761u >> 7) % 8u) + 1 + k;  // 1..9
            want[k][i / tile] += hostIn[k][i];
        }
        for (int b = 0; b < o.blocks; ++b) wantTotal[k] += want[k][b];
        if (wantTotal[k] > 2147483647LL) {
            std::fprintf(stderr, "the total would not fit an int: use fewer elements\n");
            return EXIT_FAILURE;
        }
    }

    Buffers B;
    const unsigned scratchWords = 1u << 24;  // 64 MiB, more than the L2 cache
    const int chunk = o.time ? 1 : (int)std::min<long>(o.chunk, o.launches);
    // The setup runs on the kernels' own stream, in order, and the host waits for all of it
    // before the first launch (the legacy default stream would not order it: see the top).
    CHECK(cudaStreamCreateWithFlags(&B.stream, cudaStreamNonBlocking));
    for (int k = 0; k < 2; ++k) {
        CHECK(cudaMalloc(&B.in[k], n * sizeof(int)));
        CHECK(cudaMemcpyAsync(B.in[k], hostIn[k].data(), n * sizeof(int), cudaMemcpyHostToDevice, B.stream));
    }
    CHECK(cudaMalloc(&B.partial, o.blocks * sizeof(int)));
    CHECK(cudaMalloc(&B.count, sizeof(unsigned)));
    CHECK(cudaMalloc(&B.flags, 3 * sizeof(unsigned)));  // line-up counter, its misses, done
    CHECK(cudaMalloc(&B.result, (size_t)chunk * sizeof(int)));
    CHECK(cudaMalloc(&B.seen, (size_t)chunk * o.blocks * sizeof(int)));
    CHECK(cudaMalloc(&B.ticket, (size_t)chunk * o.blocks * sizeof(unsigned)));
    CHECK(cudaMalloc(&B.scratch, (o.spare == kScratch ? scratchWords : 1u) * sizeof(unsigned)));
    CHECK(cudaMemsetAsync(B.partial, 0, o.blocks * sizeof(int), B.stream));
    CHECK(cudaMemsetAsync(B.count, 0, sizeof(unsigned), B.stream));
    CHECK(cudaMemsetAsync(B.flags, 0, 3 * sizeof(unsigned), B.stream));
    CHECK(cudaMemsetAsync(B.scratch, 0, (o.spare == kScratch ? scratchWords : 1u) * sizeof(unsigned), B.stream));
    CHECK(cudaEventCreate(&B.e0));
    CHECK(cudaEventCreate(&B.e1));
    setupWork<<<1, 1, 0, B.stream>>>(0);  // loaded before the first chunk, not during it
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(B.stream));  // setup done: only now the first launch
    std::vector<int> hResult(chunk), hSeen((size_t)chunk * o.blocks);
    std::vector<unsigned> hTicket((size_t)chunk * o.blocks);

    bool gateFailed = false;
    FILE* js = nullptr;
    if (!o.json.empty() && !(js = std::fopen(o.json.c_str(), "w"))) {
        std::fprintf(stderr, "cannot write %s\n", o.json.c_str());
        return EXIT_FAILURE;
    }
    if (js) std::fprintf(js, "{\n  \"gpu\": \"%s\",\n  \"compute_capability\": \"%d.%d\",\n  \"multiprocessors\": %d,\n"
                         "  \"blocks\": %d,\n  \"threads\": %d,\n  \"per_thread\": %d,\n  \"elements\": %ld,\n"
                         "  \"block_elements\": %ld,\n  \"resident_blocks\": %ld,\n",
                         prop.name, prop.major, prop.minor, prop.multiProcessorCount, o.blocks, o.threads,
                         o.perThread, n, tile, resident);

    if (o.time) {
        // Time a launch of each version: batches of back-to-back launches, the versions in turn,
        // the order rotated every round, so that neither drift nor position favours one.
        const Probe none{nullptr, nullptr, nullptr, nullptr, kNoSpare, nullptr, 0, nullptr, 0};
        const size_t nv = o.variants.size();
        std::printf("timing: %d rounds; each round a batch of %d launches of every version, in rotated order\n",
                    o.timeRounds, o.timeBatch);
        std::vector<std::vector<double>> us(kVariants);
        long launchNo = 0;
        for (int r = -1; r < o.timeRounds; ++r) {  // round -1 warms up and is not kept
            for (size_t q = 0; q < nv; ++q) {
                const int v = o.variants[(q + (size_t)std::max(r, 0)) % nv];
                CHECK(cudaEventRecord(B.e0, B.stream));
                for (int i = 0; i < o.timeBatch; ++i, ++launchNo)
                    launchVariant(v, o, B.stream, B.in[launchNo % 2], B.partial, B.count, B.result, none);
                CHECK(cudaEventRecord(B.e1, B.stream));
                CHECK(cudaEventSynchronize(B.e1));
                float ms = 0;
                CHECK(cudaEventElapsedTime(&ms, B.e0, B.e1));
                int got = 0;
                CHECK(cudaMemcpy(&got, B.result, sizeof(int), cudaMemcpyDeviceToHost));
                const long long w = wantTotal[(launchNo - 1) % 2];
                if (gated(v) && got != w && !gateFailed) {
                    std::printf("GATE FAILED: %s gave %d, want %lld\n", kVariantNames[v], got, w);
                    gateFailed = true;
                }
                if (r >= 0) us[v].push_back(1000.0 * ms / o.timeBatch);
            }
        }
        const int base = o.variants[0];
        std::printf("version | us a launch (median) | ratio to %s (median over rounds) | lowest | highest\n",
                    kVariantNames[base]);
        if (js) std::fprintf(js, "  \"mode\": \"time\",\n  \"time_rounds\": %d,\n  \"time_batch\": %d,\n"
                             "  \"timing\": [\n", o.timeRounds, o.timeBatch);
        for (size_t q = 0; q < nv; ++q) {
            const int v = o.variants[q];
            std::vector<double> ratio;
            for (size_t r = 0; r < us[v].size(); ++r) ratio.push_back(us[v][r] / us[base][r]);
            const double lo = *std::min_element(ratio.begin(), ratio.end());
            const double hi = *std::max_element(ratio.begin(), ratio.end());
            std::printf("%7s | %20.3f | %32.3f | %6.3f | %7.3f\n", kVariantNames[v], median(us[v]), median(ratio),
                        lo, hi);
            if (js) std::fprintf(js, "    {\"variant\": \"%s\", \"launch_us\": %.4f, \"ratio\": %.4f, "
                                 "\"ratio_lowest\": %.4f, \"ratio_highest\": %.4f}%s\n", kVariantNames[v],
                                 median(us[v]), median(ratio), lo, hi, q + 1 < nv ? "," : "");
        }
        if (js) std::fprintf(js, "  ],\n");
    } else {
        // Every version gets `launches` launches, a chunk of each in turn.
        std::vector<Tally> tally(kVariants);
        std::vector<Example> examples;
        long launchNo = 0;
        std::vector<long> done(kVariants, 0);
        for (bool more = true; more;) {
            more = false;
            for (int v : o.variants) {
                const int c = (int)std::min<long>(chunk, o.launches - done[v]);
                if (c <= 0) continue;
                const long first = launchNo;
                // Before every chunk: the partial sums and the counter start from zero, and the
                // harness's records of the chunk from all ones (no block's ticket, no total, no
                // read), so a launch that skipped a write shows as one.
                if (o.unorderedSetup) {  // the mistake: legacy default stream, not ordered with B.stream
                    setupWork<<<1, 1>>>(kSetupWorkNs);
                    CHECK(cudaGetLastError());
                    CHECK(cudaMemset(B.partial, 0, o.blocks * sizeof(int)));
                    CHECK(cudaMemset(B.count, 0, sizeof(unsigned)));
                } else {
                    setupWork<<<1, 1, 0, B.stream>>>(kSetupWorkNs);
                    CHECK(cudaGetLastError());
                    CHECK(cudaMemsetAsync(B.partial, 0, o.blocks * sizeof(int), B.stream));
                    CHECK(cudaMemsetAsync(B.count, 0, sizeof(unsigned), B.stream));
                }
                CHECK(cudaMemsetAsync(B.result, 0xFF, (size_t)c * sizeof(int), B.stream));
                CHECK(cudaMemsetAsync(B.seen, 0xFF, (size_t)c * o.blocks * sizeof(int), B.stream));
                CHECK(cudaMemsetAsync(B.ticket, 0xFF, (size_t)c * o.blocks * sizeof(unsigned), B.stream));
                for (int i = 0; i < c; ++i, ++launchNo) {
                    const Probe p{B.seen + (size_t)i * o.blocks, B.ticket + (size_t)i * o.blocks,
                                  o.lineup ? B.flags : nullptr, B.flags + 1, o.spare, B.scratch,
                                  o.spare == kScratch ? scratchWords : 1u, B.flags + 2, (unsigned)launchNo + 1u};
                    launchVariant(v, o, B.stream, B.in[launchNo % 2], B.partial, B.count, B.result + i, p);
                }
                CHECK(cudaStreamSynchronize(B.stream));
                CHECK(cudaMemcpy(hResult.data(), B.result, c * sizeof(int), cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(hSeen.data(), B.seen, (size_t)c * o.blocks * sizeof(int), cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(hTicket.data(), B.ticket, (size_t)c * o.blocks * sizeof(unsigned),
                                 cudaMemcpyDeviceToHost));
                Tally& t = tally[v];
                for (int i = 0; i < c; ++i) {
                    const long L = first + i;
                    const int k = (int)(L % 2);
                    ++t.launches;
                    long stale = 0;
                    int last = -1;  // the block that drew the last ticket
                    for (int b = 0; b < o.blocks; ++b)
                        if (hTicket[(size_t)i * o.blocks + b] == (unsigned)(o.blocks - 1)) last = b;
                    if (last < 0) ++t.noLastBlock;  // then nobody read: no stale partials to count
                    for (int b = 0; b < o.blocks && last >= 0; ++b) {
                        const int got = hSeen[(size_t)i * o.blocks + b];
                        if (got == want[k][b]) continue;
                        ++stale;
                        if (b == last) ++t.staleOwn;
                        const unsigned fromLast = (unsigned)(o.blocks - 1) - hTicket[(size_t)i * o.blocks + b];
                        ++t.staleFromLast[std::min(fromLast, 4u)];
                        const char* was = got == want[1 - k][b] ? "the previous launch's sum"
                                          : got == 0            ? "zero, as before the first launch"
                                                                : "something else";
                        ++(got == want[1 - k][b] ? t.stalePrevious : got == 0 ? t.staleZero : t.staleOther);
                        if (t.examples < 5) {
                            ++t.examples;
                            examples.push_back({v, L, b, fromLast, got, want[k][b], was});
                        }
                    }
                    t.stalePartials += stale;
                    t.maxStaleInLaunch = std::max(t.maxStaleInLaunch, stale);
                    const long long err = (long long)hResult[i] - wantTotal[k];
                    if (err != 0) {
                        ++t.wrong;
                        if (L > 0) t.maxAbsError = std::max(t.maxAbsError, std::llabs(err));
                        if (gated(v) && !gateFailed) {
                            std::printf("GATE FAILED: %s, launch %ld: result %d, want %lld\n", kVariantNames[v], L,
                                        hResult[i], wantTotal[k]);
                            gateFailed = true;
                        }
                    }
                }
                done[v] += c;
                more = more || done[v] < o.launches;
            }
        }
        unsigned missed = 0;
        CHECK(cudaMemcpy(&missed, B.flags + 1, sizeof(unsigned), cudaMemcpyDeviceToHost));
        if (o.lineup) std::printf("line-up: %u block arrivals gave up waiting\n", missed);
        std::printf("\nversion | launches | wrong results | 95%% interval (Clopper-Pearson) | stale partials "
                    "| most in one launch | gated\n");
        if (js) std::fprintf(js, "  \"mode\": \"rate\",\n  \"setup\": \"%s\",\n  \"lineup\": %s,\n  \"lineup_missed\": %u,\n"
                             "  \"spare\": \"%s\",\n  \"spare_blocks\": %d,\n  \"launches_per_variant\": %ld,\n"
                             "  \"ci_method\": \"95%% Clopper-Pearson interval, launches taken as independent trials\",\n"
                             "  \"variants\": [\n", o.unorderedSetup ? "unordered" : "ordered", o.lineup ? "true" : "false", missed, kSpareNames[o.spare],
                             o.spare ? o.spareBlocks : 0, o.launches);
        for (size_t q = 0; q < o.variants.size(); ++q) {
            const int v = o.variants[q];
            const Tally& t = tally[v];
            double lo = 0, hi = 0;
            clopperPearson(t.wrong, t.launches, &lo, &hi);
            std::printf("%7s | %8ld | %13ld | %.4g to %.4g | %14ld | %18ld | %s\n", kVariantNames[v], t.launches,
                        t.wrong, lo, hi, t.stalePartials, t.maxStaleInLaunch, gated(v) ? "yes" : "no");
            if (js) std::fprintf(js, "    {\"variant\": \"%s\", \"launches\": %ld, \"wrong\": %ld, \"rate\": %.6g, "
                                 "\"ci_low\": %.6g, \"ci_high\": %.6g, \"stale_partials\": %ld, "
                                 "\"max_stale_in_launch\": %ld, \"mean_stale_in_launch\": %.4g, "
                                 "\"stale_previous_sum\": %ld, \"stale_zero\": %ld, \"stale_other\": %ld, "
                                 "\"max_abs_error_after_launch_0\": %lld, \"stale_tickets_after_1\": %ld, "
                                 "\"stale_tickets_after_2\": %ld, \"stale_tickets_after_3\": %ld, \"stale_tickets_after_4_plus\": %ld, "
                                 "\"stale_own\": %ld, \"no_last_block\": %ld, \"gated\": %s}%s\n",
                                 kVariantNames[v], t.launches, t.wrong, (double)t.wrong / t.launches, lo, hi,
                                 t.stalePartials, t.maxStaleInLaunch, (double)t.stalePartials / t.launches,
                                 t.stalePrevious, t.staleZero, t.staleOther, t.maxAbsError, t.staleFromLast[1],
                                 t.staleFromLast[2], t.staleFromLast[3], t.staleFromLast[4], t.staleOwn,
                                 t.noLastBlock, gated(v) ? "true" : "false", q + 1 < o.variants.size() ? "," : "");
        }
        if (!examples.empty())
            std::printf("\nstale partials (the first 5 of each version): version | launch | block | tickets drawn "
                        "after it | read | want | the value read was\n");
        for (const Example& e : examples)
            std::printf("  %s | %ld | %d | %u | %d | %d | %s\n", kVariantNames[e.variant], e.launch, e.block,
                        e.fromLast, e.got, e.want, e.was);
        if (js) {
            std::fprintf(js, "  ],\n  \"examples\": [\n");
            for (size_t q = 0; q < examples.size(); ++q) {
                const Example& e = examples[q];
                std::fprintf(js, "    {\"variant\": \"%s\", \"launch\": %ld, \"block\": %d, \"tickets_after\": %u, "
                             "\"read\": %d, \"want\": %d, \"was\": \"%s\"}%s\n", kVariantNames[e.variant], e.launch,
                             e.block, e.fromLast, e.got, e.want, e.was, q + 1 < examples.size() ? "," : "");
            }
            std::fprintf(js, "  ],\n");
        }
    }
    if (js) {
        std::fprintf(js, "  \"gate_failed\": %s\n}\n", gateFailed ? "true" : "false");
        if (std::fclose(js) != 0) {
            std::fprintf(stderr, "cannot finish writing %s\n", o.json.c_str());
            return EXIT_FAILURE;
        }
    }
    if (gateFailed) {
        std::printf("GATE FAILED: a fixed version gave a wrong result\n");
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

int main(int argc, char** argv) {
    const int rc = runMain(argc, argv);  // the buffers are freed when runMain returns
    CHECK(cudaDeviceSynchronize());
    return rc;
}
