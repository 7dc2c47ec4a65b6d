#include "agent_state.h"

pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
struct agent_lib agent_libs[AGENT_MAX_LIBS];
unsigned agent_nlibs;
int agent_active;
bool agent_prepared;
bool agent_threads_stopped;
