// The layer check's own test: the engine including Qt must fail it.
#include <QObject>
