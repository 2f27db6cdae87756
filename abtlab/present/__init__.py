"""What users see: plots, widgets, the HTML report and demo, classroom labs, the study
notebooks' figures and tables, and exports. The data they show is run by abtlab.studies
(and the layers below it); nothing here runs an experiment itself."""
