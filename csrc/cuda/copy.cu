/* copy.cu - the CUDA backend's copies: host to device, device to host, between GPUs, and
 * 2-D (row by row) copies on one device, all on the device's stream.
 */
#include "backend_cuda.cuh"

#include <cstring>

/* ------------------------------------------------------------------------------------------
 * staging through pinned buffers: the other side of a choice only hardware can make
 *
 * The host memory of a blocking copy is pageable (NumPy's), which CUDA copies through pinned
 * buffers of its own. GPUDEV_CUDA_STAGED_COPIES=1 has gpudev stage copies of GD_STAGE_MIN
 * bytes and more itself instead: chunks through two pinned buffers per device, the CPU's
 * memcpy of one chunk overlapping the DMA of the other. tools/gpu_hw_check.py times both
 * (and pinned memory through PyTorch, the ceiling); the default stays CUDA's own path until
 * that figure shows staging faster. Copies on one device are serialized by its buffers' lock.
 * ---------------------------------------------------------------------------------------- */

namespace {

constexpr size_t GD_STAGE_BYTES = (size_t)8 << 20; /* each of the two buffers */
constexpr size_t GD_STAGE_MIN = (size_t)1 << 20;

struct gd_stage {
    std::mutex mutex;
    char *buf[2] = {nullptr, nullptr};  /* pinned, for the life of the process */
    cudaEvent_t done[2] = {nullptr, nullptr}; /* the last copy in or out of buf[k] */
};
gd_stage g_stage[GD_CUDA_MAX_DEVICES];

bool staged(size_t nbytes)
{
    static const bool on = gd_cuda_env_flag("GPUDEV_CUDA_STAGED_COPIES");
    return on && nbytes >= GD_STAGE_MIN;
}

/* The device's buffers, made on first use (the caller holds st.mutex); both idle on return:
 * a copy that failed half way may have left a DMA in flight. */
int stage_ready(gd_stage &st, gd_error *err)
{
    for (int k = 0; k < 2; k++) {
        if (!st.done[k]) GD_CHECK(cudaEventCreateWithFlags(&st.done[k], cudaEventDisableTiming));
        if (!st.buf[k]) GD_CHECK(cudaMallocHost((void **)&st.buf[k], GD_STAGE_BYTES));
        GD_CHECK(cudaEventSynchronize(st.done[k]));
    }
    return GD_OK;
}

/* host -> device: chunk k is copied into a buffer whose last DMA has read it, then sent */
int stage_in(gd_stage &st, char *dst, const char *src, size_t nbytes, gd_cuda_device *dev, gd_error *err)
{
    for (size_t off = 0, k = 0; off < nbytes; off += GD_STAGE_BYTES, k ^= 1) {
        const size_t len = nbytes - off < GD_STAGE_BYTES ? nbytes - off : GD_STAGE_BYTES;
        GD_CHECK(cudaEventSynchronize(st.done[k])); /* its DMA two chunks ago has read it */
        memcpy(st.buf[k], src + off, len);
        GD_CHECK(cudaMemcpyAsync(dst + off, st.buf[k], len, cudaMemcpyHostToDevice, dev->stream));
        GD_CHECK(cudaEventRecord(st.done[k], dev->stream));
    }
    GD_CHECK(cudaStreamSynchronize(dev->stream));
    return GD_OK;
}

/* device -> host: chunk i goes to buf[i % 2]; the DMA of chunk i + 1 is queued before chunk i
 * is copied out */
int stage_out(gd_stage &st, char *dst, const char *src, size_t nbytes, gd_cuda_device *dev, gd_error *err)
{
    const size_t chunks = (nbytes + GD_STAGE_BYTES - 1) / GD_STAGE_BYTES;
    auto length = [&](size_t i) { return i + 1 < chunks ? GD_STAGE_BYTES : nbytes - i * GD_STAGE_BYTES; };
    for (size_t i = 0; i <= chunks; i++) {
        if (i < chunks) { /* buf[i % 2] was emptied by the memcpy of chunk i - 2 */
            GD_CHECK(cudaMemcpyAsync(st.buf[i % 2], src + i * GD_STAGE_BYTES, length(i), cudaMemcpyDeviceToHost,
                                     dev->stream));
            GD_CHECK(cudaEventRecord(st.done[i % 2], dev->stream));
        }
        if (i > 0) {
            GD_CHECK(cudaEventSynchronize(st.done[(i - 1) % 2]));
            memcpy(dst + (i - 1) * GD_STAGE_BYTES, st.buf[(i - 1) % 2], length(i - 1));
        }
    }
    return GD_OK;
}

/* A blocking copy through the device's two buffers, which it holds meanwhile. */
int staged_copy(void *dst, const void *src, size_t nbytes, bool to_host, gd_cuda_device *dev, gd_error *err)
{
    gd_stage &st = g_stage[dev->index];
    std::lock_guard<std::mutex> lock(st.mutex);
    int rc = stage_ready(st, err);
    if (rc != GD_OK) return rc;
    return to_host ? stage_out(st, (char *)dst, (const char *)src, nbytes, dev, err)
                   : stage_in(st, (char *)dst, (const char *)src, nbytes, dev, err);
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * copies
 * ---------------------------------------------------------------------------------------- */

/* The source is the caller's memory, which may be freed as soon as we return; waiting for the
 * copy is what makes that safe whether the host memory is pageable or pinned. */
int gd_cuda_copy_from_host(void *dst, int device, const void *host_src, size_t nbytes, gd_error *err)
{
    if (nbytes == 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (staged(nbytes)) return staged_copy(dst, host_src, nbytes, false, dev, err);
    GD_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, dev->stream));
    GD_CHECK(cudaStreamSynchronize(dev->stream));
    return GD_OK;
}

int gd_cuda_copy_to_host(void *host_dst, const void *src, int device, size_t nbytes, gd_error *err)
{
    if (nbytes == 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (staged(nbytes)) return staged_copy(host_dst, src, nbytes, true, dev, err);
    GD_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, dev->stream));
    GD_CHECK(cudaStreamSynchronize(dev->stream));
    return GD_OK;
}

int gd_cuda_copy_device(void *dst, int dst_device, const void *src, int src_device, size_t nbytes, gd_error *err)
{
    if (nbytes == 0) return GD_OK;
    gd_cuda_device *s, *d;
    int rc = gd_cuda_enter(&s, src_device, err);
    if (rc != GD_OK) return rc;
    if (dst_device == src_device) {
        GD_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, s->stream));
        return GD_OK;
    }
    /* The copy runs on the destination's stream, so order it both ways: after the work
     * already queued on the source (which may still be writing src), and before anything
     * queued on the source later (an in-place update, or the stream-ordered free of src).
     * An `order` event is shared by threads; a wait that sees a later record of it only waits
     * longer on the same stream, never too little. Plain memcpy cannot cross GPUs for
     * stream-ordered pool memory; cudaMemcpyPeerAsync can, with or without peer access. */
    GD_CHECK(cudaEventRecord(s->order, s->stream));
    rc = gd_cuda_enter(&d, dst_device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaStreamWaitEvent(d->stream, s->order, 0));
    GD_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes, d->stream));
    GD_CHECK(cudaEventRecord(d->order, d->stream));
    rc = gd_cuda_enter(&s, src_device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaStreamWaitEvent(s->stream, d->order, 0));
    return GD_OK;
}

int gd_cuda_copy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width, size_t height,
                    int device, gd_error *err)
{
    if (width == 0 || height == 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (height == 1 || (dst_pitch == width && src_pitch == width)) {
        GD_CHECK(cudaMemcpyAsync(dst, src, width * height, cudaMemcpyDeviceToDevice, dev->stream));
    } else if (dst_pitch <= dev->max_pitch && src_pitch <= dev->max_pitch) {
        GD_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDeviceToDevice,
                                   dev->stream));
    } else {
        /* rows more than max_pitch (2 GiB) apart: so few fit in memory that a loop is fine */
        for (size_t r = 0; r < height; r++)
            GD_CHECK(cudaMemcpyAsync((char *)dst + r * dst_pitch, (const char *)src + r * src_pitch, width,
                                     cudaMemcpyDeviceToDevice, dev->stream));
    }
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * pinned host memory and copies that return at once
 *
 * A copy between the device and page-locked memory is a plain DMA that cudaMemcpyAsync
 * queues and returns from; pageable memory would make it wait. The core keeps the host
 * buffer alive and untouched until the copy's event has run (csrc/core/trace.c).
 * ---------------------------------------------------------------------------------------- */

/* Page-locked memory belongs to no device; `device` only makes sure CUDA is initialized. */
int gd_cuda_host_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaMallocHost(out, nbytes ? nbytes : 1));
    return GD_OK;
}

/* Errors cannot be reported from a deallocation. */
void gd_cuda_host_free(void *ptr, int device, size_t nbytes)
{
    (void)device;
    (void)nbytes;
    if (ptr && cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

int gd_cuda_copy_async(void *dst, const void *src, int to_host, int device, size_t nbytes, void *event,
                       gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (nbytes)
        GD_CHECK(cudaMemcpyAsync(dst, src, nbytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                                 dev->stream));
    GD_CHECK(cudaEventRecord((cudaEvent_t)event, dev->stream));
    return GD_OK;
}

int gd_cuda_event_synchronize(void *event, int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaEventSynchronize((cudaEvent_t)event));
    return GD_OK;
}
