/* dlpack.h - the DLPack 1.0 ABI (https://dmlc.github.io/dlpack/latest/): the C structs that
 * array libraries hand each other, inside a PyCapsule, to share memory without copying.
 *
 * Written out from the specification rather than vendored: gpudev needs only these types.
 * The layouts and values must match the specification exactly; they are a binary contract
 * with NumPy, PyTorch, CuPy, JAX and every other producer or consumer.
 */
#ifndef GPUDEV_DLPACK_H
#define GPUDEV_DLPACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version gpudev produces and understands. A major version other than this one means
 * the struct layout after `flags` changed: the consumer may only call the deleter. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

/* Capsule names: a producer names its capsule "dltensor" (DLManagedTensor) or
 * "dltensor_versioned" (DLManagedTensorVersioned); the consumer that takes ownership renames
 * it to the "used_" name, so the capsule's destructor knows not to delete the tensor. */
#define DLPACK_CAPSULE_NAME "dltensor"
#define DLPACK_USED_CAPSULE_NAME "used_dltensor"
#define DLPACK_VERSIONED_CAPSULE_NAME "dltensor_versioned"
#define DLPACK_USED_VERSIONED_CAPSULE_NAME "used_dltensor_versioned"

/* ------------------------------------------------------------------------------------------
 * version, device, data type
 * ---------------------------------------------------------------------------------------- */

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3, /* pinned host memory from cudaMallocHost */
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13, /* cudaMallocManaged */
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id; /* 0 for the CPU */
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U,
} DLDataTypeCode;

/* float32 is {kDLFloat, 32, 1}; int64 is {kDLInt, 64, 1}. */
typedef struct {
    uint8_t code; /* a DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

/* ------------------------------------------------------------------------------------------
 * tensors
 * ---------------------------------------------------------------------------------------- */

/* The first element is at (char *)data + byte_offset. strides are in elements; NULL means
 * C-contiguous (legacy tensors only: versioned producers should always give them). */
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;   /* ndim entries */
    int64_t *strides; /* ndim entries, or NULL */
    uint64_t byte_offset;
} DLTensor;

/* The pre-1.0 exchange struct (capsule "dltensor"). The consumer calls deleter(self) when it
 * no longer needs the memory; deleter may be NULL. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* flags of DLManagedTensorVersioned */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL) /* the consumer must not write */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL) /* a copy made for this consumer alone */

/* The 1.0 exchange struct (capsule "dltensor_versioned"). Everything up to `flags` keeps its
 * layout in every future version, so the deleter can always be called. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif /* GPUDEV_DLPACK_H */
