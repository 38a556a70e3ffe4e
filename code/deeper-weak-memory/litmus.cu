// Parallel GPU litmus tests: MP, SB, LB and CoRR, run as millions of instances per launch.
//
// Every access under test is a relaxed load or store at GPU scope, written as inline PTX
// with a "memory" clobber. `asm volatile` with that clobber keeps the front end (NVVM) from
// merging or moving it; it binds nothing in ptxas, which may still reorder relaxed accesses
// to different addresses, so the SASS is what shows the order (tests/test_litmus.py reads
// the PTX and the SASS of every kernel; the page shows the SASS). Two MP variants
// (kMPPlain, kMPVolatile) use plain C++ accesses instead, as a learner would write them. Fences are the CUDA built-ins, one template argument per side; the "fence"
// kRelAcq instead makes MP's flag store a release and its flag load an acquire (GPU scope).
//
// Each testing thread plays the first role of one instance and the second role of
// another: writer_inst[t] and reader_inst[t] say which; xloc and yloc place each
// instance's two locations in `mem`. Blocks past `testing_blocks` are memory stress.
// litmus.py draws the maps: by default role 1 of an instance runs one CTA before role 0;
// "random threads" pairs writer and reader CTAs by a random permutation.
//
// Where each role ran: thread 0 of every testing block writes its multiprocessor's id (%smid)
// into smids[blockIdx.x] after the test, and litmus.py compares the two roles' blocks instance by
// instance. The PTX ISA promises no placement, and %smid may change during a thread's life, so it
// records where each block was as its test ended, the one placement a page can quote.
//
// Built to a cubin by litmus.py: nvcc -cubin -O3 -lineinfo -arch=sm_90 -o litmus.cubin litmus.cu

typedef unsigned int u32;

enum Fence { kNone = 0, kCta = 1, kGpu = 2, kSys = 3, kRelAcq = 4 };
// kMPPlain and kMPVolatile are MP as a learner writes it in CUDA C++, with __threadfence()
// on both sides (F0 = F1 = kGpu): plain accesses throughout (the flag is weak: a data race
// in the model), or a volatile flag with plain data (the flag is then strong).
enum Test { kMP = 0, kSB = 1, kLB = 2, kCoRR = 3, kMPPlain = 4, kMPVolatile = 5 };

// snippet: accesses
__device__ __forceinline__ void st_relaxed(u32* p, u32 v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ u32 ld_relaxed(const u32* p) {
    u32 v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release(u32* p, u32 v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ u32 ld_acquire(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// MP's flag: relaxed, or release (store) and acquire (load) under kRelAcq.
template <int F>
__device__ __forceinline__ void st_flag(u32* p, u32 v) {
    if constexpr (F == kRelAcq) st_release(p, v); else st_relaxed(p, v);
}

template <int F>
__device__ __forceinline__ u32 ld_flag(const u32* p) {
    if constexpr (F == kRelAcq) return ld_acquire(p); else return ld_relaxed(p);
}

template <int F>
__device__ __forceinline__ void fence() {
    if constexpr (F == kCta) __threadfence_block();
    if constexpr (F == kGpu) __threadfence();
    if constexpr (F == kSys) __threadfence_system();
}
// end snippet

// Stress: hammer `lines` scratch words, `stride` words apart, with one of four patterns.
__device__ void stress(volatile u32* scratch, u32 iters, u32 pattern, u32 lines, u32 stride, u32 salt) {
    u32 sink = 0;
    for (u32 i = 0; i < iters; ++i) {
        const u32 a = ((i + salt) % lines) * stride;
        const u32 b = ((i + salt + 1) % lines) * stride;
        switch (pattern) {
            case 0: scratch[a] = i; scratch[b] = i; break;            // store-store
            case 1: scratch[a] = i; sink += scratch[b]; break;        // store-load
            case 2: sink += scratch[a]; scratch[b] = i; break;        // load-store
            default: sink += scratch[a]; sink += scratch[b]; break;   // load-load
        }
    }
    if (sink == 0xffffffffu) scratch[0] = sink;  // keeps the loads alive
}

// The id of the multiprocessor this thread runs on, as %smid reads it now.
__device__ __forceinline__ u32 sm_id() {
    u32 v;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
    return v;
}

struct Args {
    u32* smids;
    u32* mem;
    u32* r0;
    u32* r1;
    const u32* writer_inst;
    const u32* reader_inst;
    const u32* xloc;
    const u32* yloc;
    u32* barrier;
    u32* scratch;
    u32 testing_blocks;
    u32 testing_threads;
    u32 stress_iters;
    u32 stress_pattern;
    u32 stress_lines;
    u32 stress_stride;
    u32 pre_stress_iters;
    u32 barrier_spins;  // 0: no barrier
    u32 jitter;         // 0: none; else each warp waits (hash % jitter) clock cycles before the test
    u32 salt;           // varies the jitter from launch to launch
};

// A warp-uniform pseudo-random delay: the two roles of an instance live in different warps,
// so one sometimes starts well before the other (and a whole warp waits alike, so that no
// lane's wait holds the others back).
__device__ __forceinline__ void jitter_wait(u32 warp, u32 salt, u32 jitter) {
    u32 h = (warp ^ (salt * 0x9E3779B9u)) * 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    const long long until = clock64() + (long long)(h % jitter);
    while (clock64() < until) {
    }
}

template <int T, int F0, int F1>
__device__ __forceinline__ void litmus(const Args& a) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x >= a.testing_blocks) {
        stress(a.scratch, a.stress_iters, a.stress_pattern, a.stress_lines, a.stress_stride, blockIdx.x);
        return;
    }
    if (a.pre_stress_iters) stress(a.scratch, a.pre_stress_iters, a.stress_pattern, a.stress_lines,
                                   a.stress_stride, t);
    if (a.barrier_spins) {
        // Spin barrier with a timeout: lines the roles up in time without risking a hang
        // when not every testing block is resident.
        atomicAdd(a.barrier, 1u);
        volatile u32* count = a.barrier;
        for (u32 s = 0; s < a.barrier_spins && *count < a.testing_threads; ++s) {
        }
    }
    if (a.jitter) jitter_wait(t / 32u, a.salt, a.jitter);
    const u32 i = a.writer_inst[t];  // this thread plays role 0 of instance i
    const u32 j = a.reader_inst[t];  // and role 1 of instance j
    u32* xi = a.mem + a.xloc[i];
    u32* yi = a.mem + a.yloc[i];
    u32* xj = a.mem + a.xloc[j];
    u32* yj = a.mem + a.yloc[j];
    if constexpr (T == kMP) {
        // snippet: mp
        st_relaxed(xi, 1u);             // role 0 of instance i: the data,
        fence<F0>();
        st_flag<F0>(yi, 1u);            // then the flag
        const u32 r0 = ld_flag<F1>(yj); // role 1 of instance j: the flag,
        fence<F1>();
        const u32 r1 = ld_relaxed(xj);  // then the data
        a.r0[j] = r0;                   // weak: r0 == 1 && r1 == 0
        a.r1[j] = r1;
        // end snippet
    } else if constexpr (T == kMPPlain) {
        // snippet: mp-plain
        *xi = 1u;                       // plain C++ stores: st.global, weak
        __threadfence();
        *yi = 1u;
        const u32 r0 = *yj;             // plain C++ loads: ld.global, weak (L1-cacheable)
        __threadfence();
        const u32 r1 = *xj;
        // end snippet
        a.r0[j] = r0;
        a.r1[j] = r1;
    } else if constexpr (T == kMPVolatile) {
        // snippet: mp-volatile
        *xi = 1u;                                 // the data: plain
        __threadfence();
        *(volatile u32*)yi = 1u;                  // the flag: volatile (st.volatile)
        const u32 r0 = *(volatile const u32*)yj;  // ld.volatile
        __threadfence();
        const u32 r1 = *xj;                       // the data: plain
        // end snippet
        a.r0[j] = r0;
        a.r1[j] = r1;
    } else if constexpr (T == kSB) {
        st_relaxed(xi, 1u);
        fence<F0>();
        const u32 r0 = ld_relaxed(yi);
        st_relaxed(yj, 1u);
        fence<F1>();
        const u32 r1 = ld_relaxed(xj);
        a.r0[i] = r0;
        a.r1[j] = r1;
    } else if constexpr (T == kLB) {
        const u32 r0 = ld_relaxed(xi);
        fence<F0>();
        st_relaxed(yi, 1u);
        const u32 r1 = ld_relaxed(yj);
        fence<F1>();
        st_relaxed(xj, 1u);
        a.r0[i] = r0;
        a.r1[j] = r1;
    } else {  // CoRR: one write, two reads of the same location
        st_relaxed(xi, 1u);
        const u32 r0 = ld_relaxed(xj);
        fence<F1>();
        const u32 r1 = ld_relaxed(xj);
        a.r0[j] = r0;
        a.r1[j] = r1;
    }
    if (threadIdx.x == 0) a.smids[blockIdx.x] = sm_id();  // after the test: where this block ran it
}

// Flat arguments (CuPy passes scalars and pointers, not structs).
#define LITMUS(name, T, F0, F1)                                                                  \
    extern "C" __global__ void name(u32* smids, u32* mem, u32* r0, u32* r1,                    \
                                    const u32* writer_inst,                                      \
                                    const u32* reader_inst, const u32* xloc, const u32* yloc,   \
                                    u32* barrier, u32* scratch, u32 testing_blocks,              \
                                    u32 testing_threads, u32 stress_iters, u32 stress_pattern,   \
                                    u32 stress_lines, u32 stress_stride, u32 pre_stress_iters,   \
                                    u32 barrier_spins, u32 jitter, u32 salt) {                   \
        const Args a{smids, mem, r0, r1, writer_inst, reader_inst, xloc, yloc, barrier, scratch, \
                     testing_blocks, testing_threads, stress_iters, stress_pattern,             \
                     stress_lines, stress_stride, pre_stress_iters, barrier_spins, jitter, salt}; \
        litmus<T, F0, F1>(a);                                                                    \
    }

LITMUS(mp_none, kMP, kNone, kNone)
LITMUS(mp_cta, kMP, kCta, kCta)
LITMUS(mp_gpu, kMP, kGpu, kGpu)
LITMUS(mp_sys, kMP, kSys, kSys)
LITMUS(mp_gpu_writer, kMP, kGpu, kNone)
LITMUS(mp_gpu_reader, kMP, kNone, kGpu)
LITMUS(mp_rel_acq, kMP, kRelAcq, kRelAcq)
LITMUS(mp_gpu_plain, kMPPlain, kGpu, kGpu)
LITMUS(mp_gpu_volatile, kMPVolatile, kGpu, kGpu)
LITMUS(sb_none, kSB, kNone, kNone)
LITMUS(sb_gpu, kSB, kGpu, kGpu)
LITMUS(lb_none, kLB, kNone, kNone)
LITMUS(lb_gpu, kLB, kGpu, kGpu)
LITMUS(corr_none, kCoRR, kNone, kNone)

// Outcome histogram of one launch: bins[r0 * 2 + r1], counted per block in shared memory
// first. litmus.py gives each launch its own five bins, so launches can be told apart.
extern "C" __global__ void histogram(const u32* r0, const u32* r1, u32 n, unsigned long long* bins) {
    __shared__ u32 local[4];
    if (threadIdx.x < 4) local[threadIdx.x] = 0;
    __syncthreads();
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
        atomicAdd(&local[(r0[k] & 1u) * 2 + (r1[k] & 1u)], 1u);
        // Any value but 0 or 1 is impossible; it lands in bin 4 so the sum check fails loudly.
        if ((r0[k] | r1[k]) > 1u) atomicAdd(&bins[4], 1ull);
    }
    __syncthreads();
    if (threadIdx.x < 4) atomicAdd(&bins[threadIdx.x], (unsigned long long)local[threadIdx.x]);
}
