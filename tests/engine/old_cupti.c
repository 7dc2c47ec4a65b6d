/* A libcupti of another major version (12.9) for the GPU side's version check
 * (check_gpu_trace.py --mode version): it has every function the agent looks up, and
 * cuptiGetVersion answers 120090; the agent must refuse it (its records may be laid out
 * otherwise) and call nothing else of it. Every other function fails, and says so on stderr. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuptiGetVersion(uint32_t *version)
{
	*version = 120090;
	return 0;
}

#define OTHER(name)                                                                                \
	EXPORT int name(void)                                                                      \
	{                                                                                          \
		fprintf(stderr, "old_cupti: %s called\n", #name);                                 \
		return 1;                                                                          \
	}
OTHER(cuptiGetResultString)
OTHER(cuptiSubscribe)
OTHER(cuptiUnsubscribe)
OTHER(cuptiGetCallbackName)
OTHER(cuptiSetThreadIdType)
OTHER(cuptiActivityRegisterTimestampCallback)
OTHER(cuptiActivityRegisterCallbacks)
OTHER(cuptiActivityEnable)
OTHER(cuptiActivityDisable)
OTHER(cuptiActivityEnableDriverApi)
OTHER(cuptiActivityFlushAll)
OTHER(cuptiActivityGetNextRecord)
OTHER(cuptiActivityGetNumDroppedRecords)
OTHER(cuptiFinalize)
