/*
 * A FAKE libcuda.so.1: it is not NVIDIA's driver. It answers the two
 * CUDA driver API calls the kvblob host makes at registration (cuInit,
 * cuPointerGetAttribute), so the host's memory-kind check (R-ADM-8) can be
 * tested on machines without a GPU. Memory is "device memory on ordinal N"
 * when a test has marked it with fake_cuda_mark(base, size, ordinal, type);
 * every other address is unknown to CUDA, as pageable host memory is.
 * Tests load it by putting its folder first on LD_LIBRARY_PATH.
 */
#include <stddef.h>
#include <stdint.h>

#define MAX_MARKS 16

static struct {
    uintptr_t base;
    size_t size;
    int ordinal;
    unsigned type; /* CU_MEMORYTYPE_HOST 1 (pinned), CU_MEMORYTYPE_DEVICE 2 */
} marks[MAX_MARKS];
static int mark_count;

int fake_cuda_mark(void *base, size_t size, int ordinal, unsigned type)
{
    if (mark_count == MAX_MARKS) return -1;
    marks[mark_count].base = (uintptr_t)base;
    marks[mark_count].size = size;
    marks[mark_count].ordinal = ordinal;
    marks[mark_count].type = type;
    ++mark_count;
    return 0;
}

void fake_cuda_mark_clear(void) { mark_count = 0; }

int cuInit(unsigned flags)
{
    (void)flags;
    return 0;
}

int cuPointerGetAttribute(void *data, int attribute, unsigned long long ptr)
{
    for (int i = 0; i < mark_count; ++i) {
        if (ptr < marks[i].base || ptr >= marks[i].base + marks[i].size) continue;
        if (attribute == 2) { /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */
            *(unsigned *)data = marks[i].type;
            return 0;
        }
        if (attribute == 9) { /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
            *(int *)data = marks[i].ordinal;
            return 0;
        }
        return 1; /* CUDA_ERROR_INVALID_VALUE */
    }
    return 1; /* unknown to CUDA: pageable host memory */
}
