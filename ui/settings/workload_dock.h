#pragma once

#include <cstdint>

#include <QDockWidget>

#include "engine/workload/workload.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace kvscope::ui {

// Controls for a synthetic multi-user workload (the `bench serve`
// generator, engine/workload): how many requests, their length
// distribution, arrival rate, a shared system prompt, samples per request
// and the seed. Start emits the spec once the generator accepts it; a spec
// it rejects shows the generator's message instead.
class WorkloadDock : public QDockWidget {
    Q_OBJECT
public:
    explicit WorkloadDock(QWidget* parent = nullptr);

    kvscope::WorkloadSpec spec() const;
    void setSpec(const kvscope::WorkloadSpec& spec);
    // Prompt ids are drawn below the model's vocabulary size; a request never
    // exceeds its context (0: unknown, no cap).
    void setModelLimits(std::uint32_t vocab, std::uint32_t context);
    bool isWorkloadRunning() const { return running_; }
    QString statusText() const;

signals:
    void startWorkloadRequested(kvscope::WorkloadSpec spec);
    void stopWorkloadRequested();

public slots:
    void setWorkloadRunning(bool running);
    void requestStart(); // what the Start button does
    void requestStop();

private:
    QSpinBox* requests_;
    QComboBox* distribution_;
    QSpinBox* promptLen_;
    QSpinBox* outputLen_;
    QSpinBox* minLen_;
    QSpinBox* maxTotal_;
    QDoubleSpinBox* arrivalRate_;
    QSpinBox* sharedPrefix_;
    QSpinBox* samples_;
    QSpinBox* seed_;
    QPushButton* start_;
    QPushButton* stop_;
    QLabel* status_;
    std::uint32_t vocab_ = WorkloadSpec{}.vocab;
    bool running_ = false;
};

} // namespace kvscope::ui
