/* NVIDIA ioctls: decoding of one call (request code and argument bytes) with the tables of names.
 * nvioctl.h names the sources of the tables' facts; the report's section is ioctls.c. */
#include "nvioctl.h"

#include "decoders.h"
#include "put.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- tables ----------------------------------------------------------------------------------- */

struct num_name {
	uint32_t num;
	const char *name;
};

static const char *lookup(const struct num_name *t, size_t n, uint32_t num)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].num == num)
			return t[i].name;
	return NULL;
}
#define LOOKUP(t, num) lookup(t, sizeof(t) / sizeof(t[0]), num)

/* Frontend requests: 'F', NV_IOCTL_BASE (200) + n. */
static const struct num_name frontend[] = {
	{200, "CARD_INFO"},         {201, "REGISTER_FD"},      {206, "ALLOC_OS_EVENT"},
	{207, "FREE_OS_EVENT"},     {209, "STATUS_CODE"},      {210, "CHECK_VERSION_STR"},
	{211, "XFER_CMD"},          {212, "ATTACH_GPUS_TO_FD"}, {213, "QUERY_DEVICE_INTR"},
	{214, "SYS_PARAMS"},        {215, "NUMA_INFO"},        {216, "SET_NUMA_STATUS"},
	{217, "EXPORT_TO_DMABUF_FD"}, {218, "WAIT_OPEN_COMPLETE"},
};

/* Resource manager escapes: 'F', below 200. */
enum {
	ESC_ALLOC_MEMORY = 0x27, ESC_ALLOC_OBJECT = 0x28, ESC_FREE = 0x29, ESC_CONTROL = 0x2a,
	ESC_ALLOC = 0x2b, ESC_DUP_OBJECT = 0x34, ESC_SHARE = 0x35, ESC_VID_HEAP_CONTROL = 0x4a,
	ESC_MAP_MEMORY = 0x4e, ESC_UNMAP_MEMORY = 0x4f, ESC_GET_EVENT_DATA = 0x52,
	ESC_ALLOC_CONTEXT_DMA2 = 0x54, ESC_MAP_MEMORY_DMA = 0x57, ESC_UNMAP_MEMORY_DMA = 0x58,
	ESC_BIND_CONTEXT_DMA = 0x59, ESC_UPDATE_DEVICE_MAPPING_INFO = 0x5e,
};
static const struct num_name escapes[] = {
	{0x27, "RM_ALLOC_MEMORY"},    {0x28, "RM_ALLOC_OBJECT"},        {0x29, "RM_FREE"},
	{0x2a, "RM_CONTROL"},         {0x2b, "RM_ALLOC"},               {0x32, "RM_CONFIG_GET"},
	{0x33, "RM_CONFIG_SET"},      {0x34, "RM_DUP_OBJECT"},          {0x35, "RM_SHARE"},
	{0x37, "RM_CONFIG_GET_EX"},   {0x38, "RM_CONFIG_SET_EX"},       {0x39, "RM_I2C_ACCESS"},
	{0x41, "RM_IDLE_CHANNELS"},   {0x4a, "RM_VID_HEAP_CONTROL"},    {0x4d, "RM_ACCESS_REGISTRY"},
	{0x4e, "RM_MAP_MEMORY"},      {0x4f, "RM_UNMAP_MEMORY"},        {0x52, "RM_GET_EVENT_DATA"},
	{0x54, "RM_ALLOC_CONTEXT_DMA2"}, {0x56, "RM_ADD_VBLANK_CALLBACK"}, {0x57, "RM_MAP_MEMORY_DMA"},
	{0x58, "RM_UNMAP_MEMORY_DMA"}, {0x59, "RM_BIND_CONTEXT_DMA"},   {0x5c, "RM_EXPORT_OBJECT_TO_FD"},
	{0x5d, "RM_IMPORT_OBJECT_FROM_FD"}, {0x5e, "RM_UPDATE_DEVICE_MAPPING_INFO"},
};

/* nvidia-uvm: raw numbers, and where the params struct's NV_STATUS lies (-1: not within the
 * bytes the agent copies, or a layout that changed between driver versions). */
struct uvm_req {
	uint32_t num;
	const char *name;
	int status_off;
};
static const struct uvm_req uvm[] = {
	{0x30000001, "UVM_INITIALIZE", 8},
	{0x30000002, "UVM_DEINITIALIZE", -1},
	{1, "UVM_RESERVE_VA", 16},
	{2, "UVM_RELEASE_VA", 16},
	{3, "UVM_REGION_COMMIT", 40},
	{4, "UVM_REGION_DECOMMIT", 16},
	{5, "UVM_REGION_SET_STREAM", 40},
	{6, "UVM_SET_STREAM_RUNNING", 8},
	{7, "UVM_SET_STREAM_STOPPED", -1},
	{9, "UVM_RUN_TEST", 40},
	{10, "UVM_ADD_SESSION", 20},
	{11, "UVM_REMOVE_SESSION", 4},
	{12, "UVM_ENABLE_COUNTERS", -1},
	{13, "UVM_MAP_COUNTER", 40},
	{14, "UVM_CREATE_EVENT_QUEUE", 28},
	{15, "UVM_REMOVE_EVENT_QUEUE", 8},
	{16, "UVM_MAP_EVENT_QUEUE", 48},
	{17, "UVM_EVENT_CTRL", 16},
	{18, "UVM_REGISTER_MPS_SERVER", -1},
	{19, "UVM_REGISTER_MPS_CLIENT", 8},
	{20, "UVM_GET_GPU_UUID_TABLE", -1},
	{23, "UVM_CREATE_RANGE_GROUP", 8},
	{24, "UVM_DESTROY_RANGE_GROUP", 8},
	{25, "UVM_REGISTER_GPU_VASPACE", 28},
	{26, "UVM_UNREGISTER_GPU_VASPACE", 16},
	{27, "UVM_REGISTER_CHANNEL", 48},
	{28, "UVM_UNREGISTER_CHANNEL", 24},
	{29, "UVM_ENABLE_PEER_ACCESS", 32},
	{30, "UVM_DISABLE_PEER_ACCESS", 32},
	{31, "UVM_SET_RANGE_GROUP", 24},
	{33, "UVM_MAP_EXTERNAL_ALLOCATION", -1},
	{34, "UVM_FREE", 16},
	{35, "UVM_MEM_MAP", 16},
	{36, "UVM_DEBUG_ACCESS_MEMORY", 56},
	{37, "UVM_REGISTER_GPU", 36},
	{38, "UVM_UNREGISTER_GPU", 16},
	{39, "UVM_PAGEABLE_MEM_ACCESS", 4},
	{40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS", -1},
	{41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS", -1},
	{42, "UVM_SET_PREFERRED_LOCATION", -1},
	{43, "UVM_UNSET_PREFERRED_LOCATION", 16},
	{44, "UVM_ENABLE_READ_DUPLICATION", 16},
	{45, "UVM_DISABLE_READ_DUPLICATION", 16},
	{46, "UVM_SET_ACCESSED_BY", 32},
	{47, "UVM_UNSET_ACCESSED_BY", 32},
	{51, "UVM_MIGRATE", -1},
	{53, "UVM_MIGRATE_RANGE_GROUP", 24},
	{54, "UVM_ENABLE_SYSTEM_WIDE_ATOMICS", 16},
	{55, "UVM_DISABLE_SYSTEM_WIDE_ATOMICS", 16},
	{56, "UVM_TOOLS_INIT_EVENT_TRACKER", 48},
	{57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD", 4},
	{58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS", 8},
	{59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS", 8},
	{60, "UVM_TOOLS_ENABLE_COUNTERS", 8},
	{61, "UVM_TOOLS_DISABLE_COUNTERS", 8},
	{62, "UVM_TOOLS_READ_PROCESS_MEMORY", 32},
	{63, "UVM_TOOLS_WRITE_PROCESS_MEMORY", 32},
	{64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE", 12},
	{65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION", 32},
	{66, "UVM_UNMAP_EXTERNAL", 32},
	{67, "UVM_TOOLS_FLUSH_EVENTS", 0},
	{68, "UVM_ALLOC_SEMAPHORE_POOL", -1},
	{69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES", 0},
	{70, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU", 20},
	{71, "UVM_POPULATE_PAGEABLE", 20},
	{72, "UVM_VALIDATE_VA_RANGE", 16},
	{73, "UVM_CREATE_EXTERNAL_RANGE", 16},
	{74, "UVM_MAP_EXTERNAL_SPARSE", 32},
	{75, "UVM_MM_INITIALIZE", 4},
	{76, "UVM_TOOLS_INIT_EVENT_TRACKER_V2", 48},
	{77, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2", 12},
	{78, "UVM_ALLOC_DEVICE_P2P", 52},
	{79, "UVM_CLEAR_ALL_ACCESS_COUNTERS", 0},
	{2047, "UVM_IS_8_SUPPORTED", 4},
};

/* NV_STATUS: errors 0x00..0x8a by number, then the warnings. */
static const char *const nv_errors[] = {
	"NV_OK", "NV_ERR_BROKEN_FB", "NV_ERR_BUFFER_TOO_SMALL", "NV_ERR_BUSY_RETRY",
	"NV_ERR_CALLBACK_NOT_SCHEDULED", "NV_ERR_CARD_NOT_PRESENT", "NV_ERR_CYCLE_DETECTED",
	"NV_ERR_DMA_IN_USE", "NV_ERR_DMA_MEM_NOT_LOCKED", "NV_ERR_DMA_MEM_NOT_UNLOCKED",
	"NV_ERR_DUAL_LINK_INUSE", "NV_ERR_ECC_ERROR", "NV_ERR_FIFO_BAD_ACCESS", "NV_ERR_FREQ_NOT_SUPPORTED",
	"NV_ERR_GPU_DMA_NOT_INITIALIZED", "NV_ERR_GPU_IS_LOST", "NV_ERR_GPU_IN_FULLCHIP_RESET",
	"NV_ERR_GPU_NOT_FULL_POWER", "NV_ERR_GPU_UUID_NOT_FOUND", "NV_ERR_HOT_SWITCH", "NV_ERR_I2C_ERROR",
	"NV_ERR_I2C_SPEED_TOO_HIGH", "NV_ERR_ILLEGAL_ACTION", "NV_ERR_IN_USE",
	"NV_ERR_INFLATE_COMPRESSED_DATA_FAILED", "NV_ERR_INSERT_DUPLICATE_NAME",
	"NV_ERR_INSUFFICIENT_RESOURCES", "NV_ERR_INSUFFICIENT_PERMISSIONS", "NV_ERR_INSUFFICIENT_POWER",
	"NV_ERR_INVALID_ACCESS_TYPE", "NV_ERR_INVALID_ADDRESS", "NV_ERR_INVALID_ARGUMENT",
	"NV_ERR_INVALID_BASE", "NV_ERR_INVALID_CHANNEL", "NV_ERR_INVALID_CLASS", "NV_ERR_INVALID_CLIENT",
	"NV_ERR_INVALID_COMMAND", "NV_ERR_INVALID_DATA", "NV_ERR_INVALID_DEVICE",
	"NV_ERR_INVALID_DMA_SPECIFIER", "NV_ERR_INVALID_EVENT", "NV_ERR_INVALID_FLAGS",
	"NV_ERR_INVALID_FUNCTION", "NV_ERR_INVALID_HEAP", "NV_ERR_INVALID_INDEX", "NV_ERR_INVALID_IRQ_LEVEL",
	"NV_ERR_INVALID_LIMIT", "NV_ERR_INVALID_LOCK_STATE", "NV_ERR_INVALID_METHOD", "NV_ERR_INVALID_OBJECT",
	"NV_ERR_INVALID_OBJECT_BUFFER", "NV_ERR_INVALID_OBJECT_HANDLE", "NV_ERR_INVALID_OBJECT_NEW",
	"NV_ERR_INVALID_OBJECT_OLD", "NV_ERR_INVALID_OBJECT_PARENT", "NV_ERR_INVALID_OFFSET",
	"NV_ERR_INVALID_OPERATION", "NV_ERR_INVALID_OWNER", "NV_ERR_INVALID_PARAM_STRUCT",
	"NV_ERR_INVALID_PARAMETER", "NV_ERR_INVALID_PATH", "NV_ERR_INVALID_POINTER",
	"NV_ERR_INVALID_REGISTRY_KEY", "NV_ERR_INVALID_REQUEST", "NV_ERR_INVALID_STATE",
	"NV_ERR_INVALID_STRING_LENGTH", "NV_ERR_INVALID_READ", "NV_ERR_INVALID_WRITE", "NV_ERR_INVALID_XLATE",
	"NV_ERR_IRQ_NOT_FIRING", "NV_ERR_IRQ_EDGE_TRIGGERED", "NV_ERR_MEMORY_TRAINING_FAILED",
	"NV_ERR_MISMATCHED_SLAVE", "NV_ERR_MISMATCHED_TARGET", "NV_ERR_MISSING_TABLE_ENTRY",
	"NV_ERR_MODULE_LOAD_FAILED", "NV_ERR_MORE_DATA_AVAILABLE", "NV_ERR_MORE_PROCESSING_REQUIRED",
	"NV_ERR_MULTIPLE_MEMORY_TYPES", "NV_ERR_NO_FREE_FIFOS", "NV_ERR_NO_INTR_PENDING", "NV_ERR_NO_MEMORY",
	"NV_ERR_NO_SUCH_DOMAIN", "NV_ERR_NO_VALID_PATH", "NV_ERR_NOT_COMPATIBLE", "NV_ERR_NOT_READY",
	"NV_ERR_NOT_SUPPORTED", "NV_ERR_OBJECT_NOT_FOUND", "NV_ERR_OBJECT_TYPE_MISMATCH",
	"NV_ERR_OPERATING_SYSTEM", "NV_ERR_OTHER_DEVICE_FOUND", "NV_ERR_OUT_OF_RANGE",
	"NV_ERR_OVERLAPPING_UVM_COMMIT", "NV_ERR_PAGE_TABLE_NOT_AVAIL", "NV_ERR_PID_NOT_FOUND",
	"NV_ERR_PROTECTION_FAULT", "NV_ERR_RC_ERROR", "NV_ERR_REJECTED_VBIOS", "NV_ERR_RESET_REQUIRED",
	"NV_ERR_STATE_IN_USE", "NV_ERR_SIGNAL_PENDING", "NV_ERR_TIMEOUT", "NV_ERR_TIMEOUT_RETRY",
	"NV_ERR_TOO_MANY_PRIMARIES", "NV_ERR_UVM_ADDRESS_IN_USE", "NV_ERR_MAX_SESSION_LIMIT_REACHED",
	"NV_ERR_LIB_RM_VERSION_MISMATCH", "NV_ERR_PRIV_SEC_VIOLATION", "NV_ERR_GPU_IN_DEBUG_MODE",
	"NV_ERR_FEATURE_NOT_ENABLED", "NV_ERR_RESOURCE_LOST", "NV_ERR_PMU_NOT_READY", "NV_ERR_FLCN_ERROR",
	"NV_ERR_FATAL_ERROR", "NV_ERR_MEMORY_ERROR", "NV_ERR_INVALID_LICENSE", "NV_ERR_NVLINK_INIT_ERROR",
	"NV_ERR_NVLINK_MINION_ERROR", "NV_ERR_NVLINK_CLOCK_ERROR", "NV_ERR_NVLINK_TRAINING_ERROR",
	"NV_ERR_NVLINK_CONFIGURATION_ERROR", "NV_ERR_RISCV_ERROR", "NV_ERR_FABRIC_MANAGER_NOT_PRESENT",
	"NV_ERR_ALREADY_SIGNALLED", "NV_ERR_QUEUE_TASK_SLOT_NOT_AVAILABLE", "NV_ERR_KEY_ROTATION_IN_PROGRESS",
	"NV_ERR_TEST_ONLY_CODE_NOT_ENABLED", "NV_ERR_SECURE_BOOT_FAILED", "NV_ERR_INSUFFICIENT_ZBC_ENTRY",
	"NV_ERR_NVLINK_FABRIC_NOT_READY", "NV_ERR_NVLINK_FABRIC_FAILURE", "NV_ERR_GPU_MEMORY_ONLINING_FAILURE",
	"NV_ERR_REDUCTION_MANAGER_NOT_AVAILABLE", "NV_ERR_THRESHOLD_CROSSED",
	"NV_ERR_RESOURCE_RETIREMENT_ERROR", "NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "NV_ERR_BUFFER_FULL",
	"NV_ERR_BUFFER_EMPTY", "NV_ERR_MC_FLA_OFFSET_TABLE_FULL",
};
static const struct num_name nv_other_status[] = {
	{0xffff, "NV_ERR_GENERIC"},
	{0x10001, "NV_WARN_HOT_SWITCH"},
	{0x10002, "NV_WARN_INCORRECT_PERFMON_DATA"},
	{0x10003, "NV_WARN_MISMATCHED_SLAVE"},
	{0x10004, "NV_WARN_MISMATCHED_TARGET"},
	{0x10005, "NV_WARN_MORE_PROCESSING_REQUIRED"},
	{0x10006, "NV_WARN_NOTHING_TO_DO"},
	{0x10007, "NV_WARN_NULL_OBJECT"},
};

/* Classes (g_allclasses.h numbers): the ones a CUDA program allocates, and their relatives. */
static const struct num_name classes[] = {
	{0x0000, "NV01_ROOT"}, {0x0001, "NV01_ROOT_NON_PRIV"}, {0x0002, "NV01_CONTEXT_DMA"},
	{0x0005, "NV01_EVENT"}, {0x003e, "NV01_MEMORY_SYSTEM"}, {0x003f, "NV01_MEMORY_LOCAL_PRIVILEGED"},
	{0x0040, "NV01_MEMORY_LOCAL_USER"}, {0x0041, "NV01_ROOT_CLIENT"}, {0x0042, "NV_MEMORY_EXTENDED_USER"},
	{0x0070, "NV01_MEMORY_VIRTUAL"}, {0x0071, "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR"},
	{0x0073, "NV04_DISPLAY_COMMON"}, {0x0079, "NV01_EVENT_OS_EVENT"}, {0x0080, "NV01_DEVICE_0"},
	{0x00da, "NV_SEMAPHORE_SURFACE"}, {0x00de, "RM_USER_SHARED_DATA"}, {0x00e0, "NV_MEMORY_EXPORT"},
	{0x00f1, "NV_IMEX_SESSION"}, {0x00f8, "NV_MEMORY_FABRIC"}, {0x00fb, "NV_MEMORY_FABRIC_IMPORTED_REF"},
	{0x00fd, "NV_MEMORY_MULTICAST_FABRIC"}, {0x00fe, "NV_MEMORY_MAPPER"}, {0x2080, "NV20_SUBDEVICE_0"},
	{0x2081, "NV2081_BINAPI"}, {0x208f, "NV20_SUBDEVICE_DIAG"}, {0x503b, "NV50_P2P"},
	{0x503c, "NV50_THIRD_PARTY_P2P"}, {0x50a0, "NV50_MEMORY_VIRTUAL"}, {0x83de, "GT200_DEBUGGER"},
	{0x900e, "MPS_COMPUTE"}, {0x9067, "FERMI_CONTEXT_SHARE_A"}, {0x90cc, "GF100_PROFILER"},
	{0x90cd, "NV_EVENT_BUFFER"}, {0x90ce, "NV01_MEMORY_DEVICELESS"}, {0x90e6, "GF100_SUBDEVICE_MASTER"},
	{0x90f1, "FERMI_VASPACE_A"}, {0xa06c, "KEPLER_CHANNEL_GROUP_A"}, {0xa140, "KEPLER_INLINE_TO_MEMORY_B"},
	{0xb2cc, "MAXWELL_PROFILER_DEVICE"}, {0xc361, "VOLTA_USERMODE_A"}, {0xc461, "TURING_USERMODE_A"},
	{0xc46f, "TURING_CHANNEL_GPFIFO_A"}, {0xc56f, "AMPERE_CHANNEL_GPFIFO_A"}, {0xc597, "TURING_A"},
	{0xc5b5, "TURING_DMA_COPY_A"}, {0xc5c0, "TURING_COMPUTE_A"}, {0xc661, "HOPPER_USERMODE_A"},
	{0xc697, "AMPERE_A"}, {0xc6b5, "AMPERE_DMA_COPY_A"}, {0xc6c0, "AMPERE_COMPUTE_A"},
	{0xc761, "BLACKWELL_USERMODE_A"}, {0xc7b5, "AMPERE_DMA_COPY_B"}, {0xc7c0, "AMPERE_COMPUTE_B"},
	{0xc86f, "HOPPER_CHANNEL_GPFIFO_A"}, {0xc8b5, "HOPPER_DMA_COPY_A"}, {0xc96f, "BLACKWELL_CHANNEL_GPFIFO_A"},
	{0xc997, "ADA_A"}, {0xc9b5, "BLACKWELL_DMA_COPY_A"}, {0xc9c0, "ADA_COMPUTE_A"},
	{0xca6f, "BLACKWELL_CHANNEL_GPFIFO_B"}, {0xcab5, "BLACKWELL_DMA_COPY_B"},
	{0xcb33, "NV_CONFIDENTIAL_COMPUTE"}, {0xcb97, "HOPPER_A"}, {0xcbc0, "HOPPER_COMPUTE_A"},
	{0xcd97, "BLACKWELL_A"}, {0xcdc0, "BLACKWELL_COMPUTE_A"}, {0xce97, "BLACKWELL_B"},
	{0xcec0, "BLACKWELL_COMPUTE_B"},
};

/* Control commands (numbers of the ctrl headers): 0xCCCCGGII = class, category group, index. */
static const struct num_name controls[] = {
	{0x00000101, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"},
	{0x00000127, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS"},
	{0x00000136, "NV0000_CTRL_CMD_SYSTEM_GET_FABRIC_STATUS"},
	{0x0000013a, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX"},
	{0x00000201, "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS"},
	{0x00000202, "NV0000_CTRL_CMD_GPU_GET_ID_INFO"},
	{0x00000205, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2"},
	{0x00000214, "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS"},
	{0x00000215, "NV0000_CTRL_CMD_GPU_ATTACH_IDS"},
	{0x00000216, "NV0000_CTRL_CMD_GPU_DETACH_IDS"},
	{0x0000021b, "NV0000_CTRL_CMD_GPU_GET_PCI_INFO"},
	{0x00000279, "NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE"},
	{0x0000027b, "NV0000_CTRL_CMD_GPU_GET_MEMOP_ENABLE"},
	{0x00000a04, "NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO"},
	{0x00000d01, "NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE"},
	{0x00000d04, "NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY"},
	{0x00800201, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST"},
	{0x00800280, "NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES"},
	{0x00800288, "NV0080_CTRL_CMD_GPU_QUERY_SW_STATE_PERSISTENCE"},
	{0x00800289, "NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE"},
	{0x00800292, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2"},
	{0x00801307, "NV0080_CTRL_CMD_FB_GET_CAPS_V2"},
	{0x00801402, "NV0080_CTRL_CMD_HOST_GET_CAPS_V2"},
	{0x0080170d, "NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST"},
	{0x20800102, "NV2080_CTRL_CMD_GPU_GET_INFO_V2"},
	{0x20800110, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING"},
	{0x20800111, "NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING"},
	{0x20800119, "NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO"},
	{0x2080012f, "NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS"},
	{0x20800131, "NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES"},
	{0x20800145, "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION"},
	{0x20800146, "NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION"},
	{0x2080014a, "NV2080_CTRL_CMD_GPU_GET_GID_INFO"},
	{0x20800170, "NV2080_CTRL_CMD_GPU_GET_ENGINES_V2"},
	{0x2080018b, "NV2080_CTRL_CMD_GPU_GET_ACTIVE_PARTITION_IDS"},
	{0x2080018d, "NV2080_CTRL_CMD_GPU_GET_PIDS"},
	{0x2080018e, "NV2080_CTRL_CMD_GPU_GET_PID_INFO"},
	{0x20800195, "NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG"},
	{0x208001a3, "NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO"},
	{0x20800406, "NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO"},
	{0x2080110b, "NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS"},
	{0x20801201, "NV2080_CTRL_CMD_GR_GET_INFO"},
	{0x20801210, "NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE"},
	{0x20801218, "NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE"},
	{0x2080121b, "NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER"},
	{0x20801227, "NV2080_CTRL_CMD_GR_GET_CAPS_V2"},
	{0x2080122a, "NV2080_CTRL_CMD_GR_GET_GPC_MASK"},
	{0x2080122b, "NV2080_CTRL_CMD_GR_GET_TPC_MASK"},
	{0x20801303, "NV2080_CTRL_CMD_FB_GET_INFO_V2"},
	{0x20801701, "NV2080_CTRL_CMD_MC_GET_ARCH_INFO"},
	{0x20801702, "NV2080_CTRL_CMD_MC_SERVICE_INTERRUPTS"},
	{0x20801801, "NV2080_CTRL_CMD_BUS_GET_PCI_INFO"},
	{0x20801803, "NV2080_CTRL_CMD_BUS_GET_PCI_BAR_INFO"},
	{0x20801823, "NV2080_CTRL_CMD_BUS_GET_INFO_V2"},
	{0x2080182a, "NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS"},
	{0x2080200a, "NV2080_CTRL_CMD_PERF_BOOST"},
	{0x20802209, "NV2080_CTRL_CMD_RC_GET_WATCHDOG_INFO"},
	{0x2080220c, "NV2080_CTRL_CMD_RC_RELEASE_WATCHDOG_REQUESTS"},
	{0x20802210, "NV2080_CTRL_CMD_RC_SOFT_DISABLE_WATCHDOG"},
	{0x20802a0a, "NV2080_CTRL_CMD_CE_GET_ALL_CAPS"},
	{0x20803002, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS"},
	{0x20803601, "NV2080_CTRL_CMD_GSP_GET_FEATURES"},
	{0x503c0102, "NV503C_CTRL_CMD_REGISTER_VA_SPACE"},
	{0x503c0104, "NV503C_CTRL_CMD_REGISTER_VIDMEM"},
	{0x503c0105, "NV503C_CTRL_CMD_UNREGISTER_VIDMEM"},
	{0x83de0309, "NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK"},
	{0x83de030c, "NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES"},
	{0x83de0310, "NV83DE_CTRL_CMD_DEBUG_CLEAR_ALL_SM_ERROR_STATES"},
	{0x906f0102, "NV906F_CTRL_CMD_RESET_CHANNEL"},
	{0xa06c0101, "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE"},
	{0xa06c0103, "NVA06C_CTRL_CMD_SET_TIMESLICE"},
	{0xa06c0105, "NVA06C_CTRL_CMD_PREEMPT"},
	{0xc36f0101, "NVC36F_CTRL_GET_CLASS_ENGINEID"},
	{0xc36f0108, "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN"},
	{0xcb330101, "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_CAPABILITIES"},
};

static const struct num_name errnos[] = {
	{1, "EPERM"}, {2, "ENOENT"}, {4, "EINTR"}, {5, "EIO"}, {6, "ENXIO"}, {9, "EBADF"},
	{11, "EAGAIN"}, {12, "ENOMEM"}, {13, "EACCES"}, {14, "EFAULT"}, {16, "EBUSY"}, {19, "ENODEV"},
	{22, "EINVAL"}, {25, "ENOTTY"}, {28, "ENOSPC"}, {38, "ENOSYS"}, {95, "EOPNOTSUPP"},
	{110, "ETIMEDOUT"}, {512, "ERESTARTSYS"},
};

const char *rp_nv_status_name(uint32_t s)
{
	if (s < sizeof(nv_errors) / sizeof(nv_errors[0]))
		return nv_errors[s];
	return LOOKUP(nv_other_status, s);
}

const char *rp_nv_class_name(uint32_t c)
{
	return LOOKUP(classes, c);
}

const char *rp_nv_ctrl_name(uint32_t cmd)
{
	return LOOKUP(controls, cmd);
}

const char *rp_errno_name(int e)
{
	return e > 0 ? LOOKUP(errnos, (uint32_t)e) : NULL;
}

/* ---- one call --------------------------------------------------------------------------------- */

struct bytes {
	const uint8_t *p;
	unsigned n;
};

static int rd32(struct bytes b, unsigned off, uint32_t *v)
{
	if (off + 4 > b.n)
		return 0;
	memcpy(v, b.p + off, 4);
	return 1;
}

static void set_status(struct rp_ioctl *io, struct bytes b, unsigned off, unsigned size)
{
	/* only inside the struct the driver used (size 0: not known, trust the bytes) */
	if (size && off + 4 > size)
		return;
	io->has_status = (uint8_t)rd32(b, off, &io->status);
}

static void set_class(struct rp_ioctl *io, struct bytes b, unsigned off)
{
	io->has_class = (uint8_t)rd32(b, off, &io->hclass);
}

/* The NVOSxx struct of escape esc (size: its full size, for the layouts that grew). */
static void decode_rm(struct rp_ioctl *io, uint32_t esc, struct bytes b, unsigned size)
{
	switch (esc) {
	case ESC_ALLOC_MEMORY: /* NVOS02 (+ fd): hRoot hObjectParent hObjectNew hClass flags; status@40 */
	case ESC_ALLOC_OBJECT: /* NVOS05: hRoot hObjectParent hObjectNew hClass status */
	case ESC_ALLOC:        /* NVOS21 / NVOS64: hRoot hObjectParent hObjectNew hClass pAllocParms... */
	case ESC_ALLOC_CONTEXT_DMA2: /* NVOS39: hObjectParent hSubDevice hObjectNew hClass ... status@48 */
		rd32(b, 0, &io->hclient);
		rd32(b, esc == ESC_ALLOC_CONTEXT_DMA2 ? 0 : 4, &io->hobject);
		io->has_new = (uint8_t)rd32(b, 8, &io->hnew);
		set_class(io, b, 12);
		if (esc == ESC_ALLOC_MEMORY)
			set_status(io, b, 40, size);
		else if (esc == ESC_ALLOC_OBJECT)
			set_status(io, b, 16, size);
		else if (esc == ESC_ALLOC_CONTEXT_DMA2)
			set_status(io, b, 48, size);
		else
			set_status(io, b, size == 48 ? 40 : 28, size); /* NVOS64 is 48 bytes, NVOS21 32 */
		break;
	case ESC_FREE: /* NVOS00: hRoot hObjectParent hObjectOld status */
		rd32(b, 0, &io->hclient);
		rd32(b, 8, &io->hobject);
		set_status(io, b, 12, size);
		break;
	case ESC_CONTROL: /* NVOS54: hClient hObject cmd flags params paramsSize status */
		rd32(b, 0, &io->hclient);
		rd32(b, 4, &io->hobject);
		io->has_cmd = (uint8_t)rd32(b, 8, &io->cmd);
		set_status(io, b, 28, size);
		break;
	case ESC_DUP_OBJECT: /* NVOS55: hClient hParent hObject hClientSrc hObjectSrc flags status */
		rd32(b, 0, &io->hclient);
		rd32(b, 16, &io->hobject);
		io->has_new = (uint8_t)rd32(b, 8, &io->hnew);
		set_status(io, b, 24, size);
		break;
	case ESC_SHARE: /* NVOS57: hClient hObject sharePolicy status (last) */
		rd32(b, 0, &io->hclient);
		rd32(b, 4, &io->hobject);
		if (size >= 12)
			set_status(io, b, size - 4, size);
		break;
	case ESC_VID_HEAP_CONTROL: /* NVOS32: hRoot hObjectParent function hVASpace ivcHeapNumber status */
		rd32(b, 0, &io->hclient);
		rd32(b, 4, &io->hobject);
		set_status(io, b, 20, size);
		break;
	case ESC_MAP_MEMORY: /* NVOS33 (+ fd): hClient hDevice hMemory offset length pLinearAddress status */
		rd32(b, 0, &io->hclient);
		rd32(b, 8, &io->hobject);
		set_status(io, b, 40, size);
		break;
	case ESC_UNMAP_MEMORY: /* NVOS34: hClient hDevice hMemory pLinearAddress status flags */
		rd32(b, 0, &io->hclient);
		rd32(b, 8, &io->hobject);
		set_status(io, b, 24, size);
		break;
	case ESC_GET_EVENT_DATA: /* NVOS41: pEvent MoreEvents status */
		set_status(io, b, 12, size);
		break;
	case ESC_MAP_MEMORY_DMA: /* NVOS46: ... flags; 64 bytes since flags2/kindOverride, else 56 */
		rd32(b, 0, &io->hclient);
		rd32(b, 12, &io->hobject);
		set_status(io, b, size >= 64 ? 56 : 48, size);
		break;
	case ESC_UNMAP_MEMORY_DMA: /* NVOS47: ... flags dmaOffset [size] status: 48 or 40 bytes */
		rd32(b, 0, &io->hclient);
		rd32(b, 12, &io->hobject);
		set_status(io, b, size >= 48 ? 40 : 32, size);
		break;
	case ESC_BIND_CONTEXT_DMA: /* NVOS49: hClient hChannel hCtxDma status */
		rd32(b, 0, &io->hclient);
		rd32(b, 4, &io->hobject);
		set_status(io, b, 12, size);
		break;
	case ESC_UPDATE_DEVICE_MAPPING_INFO: /* NVOS56: ... pOldCpuAddress pNewCpuAddress status */
		rd32(b, 0, &io->hclient);
		set_status(io, b, 32, size);
		break;
	default:
		break;
	}
}

void rp_ioctl_decode(const struct tr_trace *t, const struct tr_call *c, struct rp_ioctl *io)
{
	memset(io, 0, sizeof(*io));
	uint32_t req = (uint32_t)tr_call_arg(c, 1);
	io->request = req;
	io->timed = (uint8_t)tr_call_timed(c);
	io->failed = io->timed && (uint32_t)c->ret != 0;
	io->dir = (uint8_t)(req >> 30);
	uint32_t type = (req >> 8) & 0xff, nr = req & 0xff;
	/* the argument bytes of the DATA record, and what XFER_CMD carried after them */
	struct bytes b = {NULL, 0}, inner = {NULL, 0};
	for (uint32_t k = 0; k < c->ndata; k++) {
		const struct tr_data *d = &t->data[c->data_first + k];
		if (!d->decoder || d->decoder >= cuhook_decoder_count ||
		    cuhook_decoders[d->decoder].str_kind != CUHOOK_STR_RAW || d->nvalues < 2)
			continue;
		uint64_t n = d->values[0] < d->str_len ? d->values[0] : d->str_len;
		b = (struct bytes){(const uint8_t *)d->str, (unsigned)n};
		inner = (struct bytes){(const uint8_t *)d->str + n, (unsigned)(d->str_len - n)};
		io->err = (int)d->values[1];
		io->has_data = n > 0;
		break;
	}
	if (io->dir != 0 && type == 'F') {
		io->nr = nr;
		io->size = (uint16_t)((req >> 16) & 0x3fff);
		if (nr >= 200) {
			io->family = RP_IOC_FRONTEND;
			io->name = LOOKUP(frontend, nr);
		} else {
			io->family = RP_IOC_RM;
			io->name = LOOKUP(escapes, nr);
			io->esc = nr;
			io->esc_name = io->name;
		}
	} else if (io->dir == 0) {
		for (size_t i = 0; i < sizeof(uvm) / sizeof(uvm[0]); i++)
			if (uvm[i].num == req) {
				io->family = RP_IOC_UVM;
				io->nr = req;
				io->name = uvm[i].name;
				if (uvm[i].status_off >= 0)
					set_status(io, b, (unsigned)uvm[i].status_off, 0);
				break;
			}
		if (!io->family && ((req >= 1 && req <= 2047) || (req >> 4) == 0x3000000u)) {
			io->family = RP_IOC_UVM; /* a number of the range, not in the table */
			io->nr = req;
		}
		return;
	} else {
		return; /* another driver's or an unknown encoding: raw */
	}
	if (!io->has_data)
		return;
	uint32_t v32 = 0;
	switch (io->family == RP_IOC_FRONTEND ? nr : 0) {
	case 0: /* an RM escape */
		decode_rm(io, io->esc, b, io->size);
		break;
	case 201: /* REGISTER_FD: int ctl_fd */
		if (rd32(b, 0, &v32))
			snprintf(io->extra, sizeof(io->extra), "ctl_fd %d", (int)v32);
		break;
	case 206: /* ALLOC_OS_EVENT, FREE_OS_EVENT: hClient hDevice fd Status */
	case 207:
		rd32(b, 0, &io->hclient);
		rd32(b, 4, &io->hobject);
		if (rd32(b, 8, &v32))
			snprintf(io->extra, sizeof(io->extra), "client 0x%x device 0x%x fd %d", io->hclient, io->hobject,
			         (int)v32);
		set_status(io, b, 12, io->size);
		break;
	case 209: { /* STATUS_CODE: domain bus slot; status (the GPU's, a value, not the call's) */
		uint32_t dom = 0, st = 0;
		if (rd32(b, 0, &dom) && rd32(b, 8, &st) && b.n >= 6)
			snprintf(io->extra, sizeof(io->extra), "%04x:%02x:%02x status 0x%x", dom, b.p[4], b.p[5], st);
		break;
	}
	case 210: { /* CHECK_VERSION_STR: cmd reply versionString[64] */
		uint32_t cmd = 0, reply = 0;
		if (rd32(b, 0, &cmd) && rd32(b, 4, &reply)) {
			char ver[65];
			unsigned k = 0;
			for (; k + 8 < b.n && k < 64 && b.p[8 + k]; k++)
				ver[k] = (b.p[8 + k] < 0x20 || b.p[8 + k] >= 0x7f || b.p[8 + k] == '"') ? '?' : (char)b.p[8 + k];
			ver[k] = 0;
			snprintf(io->extra, sizeof(io->extra), "version \"%s\" cmd 0x%x reply %u%s", ver, cmd, reply,
			         reply == 1 ? " (recognized)" : reply == 0 ? " (unrecognized)" : "");
		}
		break;
	}
	case 212: { /* ATTACH_GPUS_TO_FD: NvU32 gpu ids */
		size_t pos = 0;
		for (unsigned off = 0; off + 4 <= b.n && off < 16 && pos + 12 < sizeof(io->extra); off += 4) {
			rd32(b, off, &v32);
			pos += (size_t)snprintf(io->extra + pos, sizeof(io->extra) - pos, "%s0x%x", off ? " " : "gpus ", v32);
		}
		break;
	}
	case 214: { /* SYS_PARAMS: memblock_size */
		uint32_t lo = 0, hi = 0;
		if (rd32(b, 0, &lo) && rd32(b, 4, &hi))
			snprintf(io->extra, sizeof(io->extra), "memblock_size 0x%llx",
			         (unsigned long long)hi << 32 | lo);
		break;
	}
	case 215: { /* NUMA_INFO: nid status ... */
		uint32_t nid = 0, st = 0;
		if (rd32(b, 0, &nid) && rd32(b, 4, &st))
			snprintf(io->extra, sizeof(io->extra), "nid %d numa status %d", (int)nid, (int)st);
		break;
	}
	case 217: /* EXPORT_TO_DMABUF_FD: fd hClient ... (status at the end, past what is copied) */
		if (rd32(b, 0, &v32) && rd32(b, 4, &io->hclient))
			snprintf(io->extra, sizeof(io->extra), "fd %d client 0x%x", (int)v32, io->hclient);
		break;
	case 218: { /* WAIT_OPEN_COMPLETE: int rc; adapterStatus */
		uint32_t rc = 0;
		if (rd32(b, 0, &rc) && rd32(b, 4, &v32))
			snprintf(io->extra, sizeof(io->extra), "rc %d adapter status 0x%x", (int)rc, v32);
		break;
	}
	case 211: { /* XFER_CMD: cmd size ptr; the command's struct follows in `inner` */
		uint32_t cmd = 0, size = 0;
		if (rd32(b, 0, &cmd) && rd32(b, 4, &size)) {
			io->xfer = 1;
			io->esc = cmd;
			io->size = (uint16_t)(size > 0xffff ? 0xffff : size);
			if (cmd < 200) {
				io->esc_name = LOOKUP(escapes, cmd);
				decode_rm(io, cmd, inner, size);
			} else {
				io->esc_name = LOOKUP(frontend, cmd);
			}
		}
		break;
	}
	case 213: /* QUERY_DEVICE_INTR: intrStatus status */
		set_status(io, b, 4, io->size);
		break;
	default:
		break;
	}
}


const char *rp_ioctl_label(const struct rp_ioctl *io, char *buf, size_t len)
{
	if (io->xfer) {
		if (io->esc_name)
			snprintf(buf, len, "XFER_CMD>%s", io->esc_name);
		else
			snprintf(buf, len, "XFER_CMD>0x%x", io->esc);
	} else if (io->name) {
		snprintf(buf, len, "%s", io->name);
	} else if (io->family == RP_IOC_FRONTEND || io->family == RP_IOC_RM) {
		snprintf(buf, len, "'F' 0x%02x", io->nr);
	} else if (io->family == RP_IOC_UVM) {
		snprintf(buf, len, "UVM %u", io->nr);
	} else {
		snprintf(buf, len, "0x%08x", io->request);
	}
	return buf;
}

int rp_ioctl_failed(const struct rp_ioctl *io)
{
	return io->failed || (io->has_status && io->status != 0);
}

size_t rp_ioctl_describe(const struct rp_ioctl *io, char *buf, size_t len)
{
	size_t pos = 0;
	char l[64];
	if (!len)
		return 0;
	buf[0] = 0;
	pos = rp_put(buf, len, pos, "%s", rp_ioctl_label(io, l, sizeof(l)));
	if (!io->name && !io->xfer && io->dir) /* an _IOC-encoded request no table knows: its fields */
		pos = rp_put(buf, len, pos, " (request 0x%08x: type 0x%02x nr 0x%02x size %u dir %u)", io->request,
		          (io->request >> 8) & 0xff, io->request & 0xff, (io->request >> 16) & 0x3fff, io->dir);
	if (io->extra[0])
		pos = rp_put(buf, len, pos, " %s", io->extra);
	if (io->has_cmd) {
		const char *n = rp_nv_ctrl_name(io->cmd);
		pos = rp_put(buf, len, pos, " cmd 0x%08x%s%s", io->cmd, n ? " " : "", n ? n : "");
	}
	if (io->has_class) {
		const char *n = rp_nv_class_name(io->hclass);
		pos = rp_put(buf, len, pos, " class 0x%x%s%s", io->hclass, n ? " " : "", n ? n : "");
	}
	if (io->esc && (io->hclient || io->hobject))
		pos = rp_put(buf, len, pos, " client 0x%x object 0x%x", io->hclient, io->hobject);
	if (io->has_new && io->hnew && (io->esc == ESC_ALLOC || io->esc == ESC_ALLOC_MEMORY || io->esc == ESC_ALLOC_OBJECT ||
	                    io->esc == ESC_ALLOC_CONTEXT_DMA2 || io->esc == ESC_DUP_OBJECT))
		pos = rp_put(buf, len, pos, " -> 0x%x", io->hnew);
	if (io->has_status) {
		const char *n = rp_nv_status_name(io->status);
		if (n)
			pos = rp_put(buf, len, pos, " %s", n);
		else
			pos = rp_put(buf, len, pos, " status 0x%x", io->status);
	}
	if (io->failed) {
		const char *n = rp_errno_name(io->err);
		pos = rp_put(buf, len, pos, " -> -1");
		if (io->err)
			pos = rp_put(buf, len, pos, " %s%s%d%s", n ? n : "", n ? " (" : "errno ", io->err, n ? ")" : "");
	}
	return pos;
}
