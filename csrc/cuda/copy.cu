/* copy.cu - the CUDA backend's copies: host to device, device to host, between GPUs, and
 * 2-D (row by row) copies on one device, all on the device's stream.
 */
#include "backend_cuda.cuh"

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
