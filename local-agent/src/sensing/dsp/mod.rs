//! Signal-processing building blocks shared by the estimators.
